"""A resumed run and the guards of a tool call in flight at the crash: the call whose
intent the journal holds had passed its guards, and ran (or began to) with the
arguments as they left them. The resume runs it again with exactly those arguments and
the same key; it does not judge it anew (a guard that rewrites differently now, or trips
now, would run another call than the one that may have acted, or refuse one that did).
On SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import msgspec
import pytest

from regiment import Planner, ScriptedModel, Team, Worker
from regiment.hierarchy import GuardrailRewrote, RunCompleted, RunningTeam, RunStarted
from regiment.hierarchy.guard import Outcome, PlanSubject, Rewrite, ToolCallSubject, Trip
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import EventRecorded, ToolCallStarted, open_journal
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response
from regiment.tools import RunContext, tool

from .snapshot import crash_sites, snapshot

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgres"])
def sites(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """The run's journal, and where what a crash leaves of it goes."""
    return crash_sites(str(request.param), tmp_path, request)


PLAN = json.dumps({"steps": [{"id": "s1", "description": "refund order 7"}]})
GOAL = "refund order 7"


@dataclasses.dataclass
class Till:
    """What the refund tool was asked to do, by key; ``crash`` runs inside its body."""

    refunds: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    crash: Callable[[], Awaitable[None]] | None = None


def refund_brain(request: ModelRequest) -> ModelResponse | str:
    """The plan; a worker that refunds order 7 once, then says what its tool said."""
    if request.role == "planner":
        return PLAN
    if request.role == "worker":
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call_response("issue_refund", {"order_id": 7}, call_id="c1")
        return f"done: {results[0].content}"
    return "refunded"


def team_of(till: Till, guard: Callable[[ToolCallSubject], Outcome]) -> Team:
    @tool
    async def issue_refund(ctx: RunContext[None], order_id: int) -> str:
        """Refund an order."""
        till.refunds.append((order_id, ctx.idempotency_key))
        if till.crash is not None:
            await till.crash()
        return f"refunded {order_id}"

    model = ScriptedModel(refund_brain)
    worker = Worker(
        name="billing",
        description="refunds",
        model=model,
        tools=[issue_refund],
        tool_guardrails={"issue_refund": [guard]},
    )
    return Team(name="t", planner=Planner(model=model), workers=[worker])


async def crashed_in_the_tool(sites: tuple[str, str], till: Till, team: Team) -> tuple[str, str]:
    """Run ``team`` until its tool body runs; the journal as a kill -9 there would leave it."""
    live, copy = sites
    reached, run_ids = anyio.Event(), []

    async def crash() -> None:
        await anyio.to_thread.run_sync(snapshot, live, copy)
        reached.set()
        await anyio.Event().wait()  # until the run is cancelled

    till.crash = crash

    async def go(running: RunningTeam) -> None:
        async with running.stream(GOAL) as stream:
            async for event in stream:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    async with team.start(journal=live) as running, anyio.create_task_group() as tg:
        tg.start_soon(go, running)
        await reached.wait()
        tg.cancel_scope.cancel()
    till.crash = None
    return copy, run_ids[0]


async def resumed(path: str, run_id: str, team: Team) -> RunCompleted:
    journal = await open_journal(path, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with team.start(journal=journal) as running, running.resume_stream(run_id) as s:
            events = [event async for event in s]
    finally:
        await journal.close()
    last = events[-1]
    assert isinstance(last, RunCompleted), last
    return last


async def test_a_call_in_flight_runs_again_with_the_arguments_its_guard_gave_it(
    sites: tuple[str, str],
) -> None:
    rewrites = iter([101, 102])  # a guard that rewrites differently each time it is asked

    def reroute(subject: ToolCallSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, arguments={"order_id": next(rewrites)}))

    till = Till()
    path, run_id = await crashed_in_the_tool(sites, till, team_of(till, reroute))
    assert [order for order, _ in till.refunds] == [101]
    done = await resumed(path, run_id, team_of(till, reroute))
    (first, key), (again, same) = till.refunds
    assert (first, again) == (101, 101)
    assert key == same
    assert "refunded 101" in done.result.steps[0].output


async def test_a_call_in_flight_is_not_refused_at_the_resume_by_a_guard_that_now_trips(
    sites: tuple[str, str],
) -> None:
    verdicts = iter([False, True])  # passes the call, then would refuse it

    def flaky(subject: ToolCallSubject) -> Outcome:
        return Trip("not now") if next(verdicts, True) else Rewrite(subject)

    till = Till()
    path, run_id = await crashed_in_the_tool(sites, till, team_of(till, flaky))
    done = await resumed(path, run_id, team_of(till, flaky))
    assert [order for order, _ in till.refunds] == [7, 7]
    assert "refunded 7" in done.result.steps[0].output


async def test_a_plan_a_guard_rewrote_before_the_crash_is_the_plan_resumed(
    sites: tuple[str, str],
) -> None:
    passes = iter(range(1, 10))  # a plan guard that rewrites differently each time

    def stamp(subject: PlanSubject) -> Outcome:
        n = next(passes)
        steps = tuple(
            msgspec.structs.replace(s, description=f"{s.description} (pass {n})")
            for s in subject.steps
        )
        return Rewrite(dataclasses.replace(subject, steps=steps))

    def allow(subject: ToolCallSubject) -> Outcome:
        return Rewrite(subject)

    till = Till()
    team = team_of(till, allow)
    path, run_id = await crashed_in_the_tool(
        sites, till, dataclasses.replace(team, guardrails=[stamp])
    )
    done = await resumed(
        path, run_id, dataclasses.replace(team_of(till, allow), guardrails=[stamp])
    )
    (plan,) = done.result.plans
    assert [s.description for s in plan.steps] == ["refund order 7 (pass 1)"]
    (step,) = done.result.steps
    assert step.output == "done: refunded 7"


async def test_a_resumed_call_in_flight_still_tells_which_guard_rewrote_it(
    sites: tuple[str, str],
) -> None:
    """Its guards are not run again at the resume, but the rewrite they made before the
    crash is journaled with the call's intent: the resumed run's events (and so its
    journal, which ``regiment show`` reads) name the guard, once."""

    def reroute(subject: ToolCallSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, arguments={"order_id": 101}))

    till = Till()
    path, run_id = await crashed_in_the_tool(sites, till, team_of(till, reroute))
    journal = await open_journal(path, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        team = team_of(till, reroute)
        async with team.start(journal=journal) as running, running.resume_stream(run_id) as s:
            events = [event async for event in s]
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    told = [(e.guardrail, e.subject, e.step_id) for e in events if isinstance(e, GuardrailRewrote)]
    assert told == [("reroute", "tool_call", "s1")]
    kept = [
        r.event["guardrail"]
        for r in records
        if isinstance(r, EventRecorded) and r.kind == "GuardrailRewrote"
    ]
    assert kept == ["reroute"]
    (intent,) = [r for r in records if isinstance(r, ToolCallStarted)]
    assert [n["guardrail"] for n in intent.guardrails] == ["reroute"]
