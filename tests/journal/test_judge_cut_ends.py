"""A judge's reply is counted once whatever cuts the guard chain it answered in.

A step's guard chain resumed from a journal replays its first judge's reply and is cut
(the run cancelled) while its second guard still works: the replayed reply was marked
counted at once, but only the chain's end charges the step with it, so the cancelled
run never counted it (no spending budget: no cut's charge either). Now a replayed reply
is taken only once its chain charges it, else the step's report or the run's end does.

A team stopped under its run (its ``start()`` block left) while a planner-side request
guard's judge had answered and the planner's call was still in flight lost that judge's
reply from the run's end: the run's normal end charges what its guards handed over, the
team-stopping end did not. (Real SQLite files and a real PostgreSQL server.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import msgspec
import pytest

from regiment import Approve, Budget, Planner, ScriptedModel, Team, Worker, tool
from regiment.hierarchy import RunFailed, RunResult, RunStarted
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, RequestSubject, judge
from regiment.journal import EventRecorded, ModelCallFinished, open_journal
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

from ..hierarchy.cut_run import PRICE, held_until_cut
from .killed_child import journal_at

pytestmark = pytest.mark.anyio

CASES = [("asyncio", "sqlite"), ("trio", "sqlite"), ("asyncio", "postgres"), ("trio", "postgres")]
ASK = ModelRequest(messages=(Message.user("is this fine?"),))


def _clerk(request: ModelRequest) -> str | ModelResponse:
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "refund", "worker": "clerk"}]})
    if any(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts):
        return "refunded"
    call = ToolCallPart(id="r1", name="refund", arguments={"order": "7"})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")


def _step_team(stuck: anyio.Event | None, budget: Budget) -> Team:
    """One step: the clerk's reply asks for ``refund`` (approval: the run pauses), judged
    by two reply guards; the second, given ``stuck``, sets it and never ends."""

    @tool(requires_approval=True)
    async def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    quick = ScriptedModel(lambda request: "fine", price=PRICE)

    async def first(subject: ReplySubject) -> Outcome:
        await judge(quick, ASK)
        return Pass()

    async def second(subject: ReplySubject) -> Outcome:
        if stuck is not None:
            stuck.set()
            await anyio.sleep_forever()
        return Pass()

    model = ScriptedModel(_clerk, price=PRICE)
    return Team(
        name="shop",
        planner=Planner(model=model),
        workers=[
            Worker(
                name="clerk",
                description="refunds",
                model=model,
                tools=[refund],
                guardrails=[first, second],
            )
        ],
        budget=budget,
    )


def _ended(records: Sequence[object]) -> RunResult:
    (*_, last) = [r for r in records if isinstance(r, EventRecorded) and r.kind == "RunCompleted"]
    return msgspec.convert(last.event["result"], RunResult)


def _answered(records: Sequence[object]) -> tuple[Usage, int]:
    """What the journal says the models answered: usage, model calls."""
    finished = [r for r in records if isinstance(r, ModelCallFinished)]
    return sum((r.response.usage for r in finished), Usage()), sum(r.calls for r in finished)


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
@pytest.mark.parametrize("usd", [None, 1.0])
async def test_a_resumed_steps_chain_cut_after_its_replayed_judge_counts_it_once(
    anyio_backend: str, kind: str, usd: float | None, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    journal = await open_journal(journal_at(kind, tmp_path, request))
    budget = Budget(usd=usd)
    stuck = anyio.Event()
    try:
        async with _step_team(None, budget).start(journal=journal) as running:
            paused = await running.run("refund order 7")
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
        resumed = _step_team(stuck, budget)
        async with (
            resumed.start(journal=journal) as running,
            running.resume_stream(paused.run_id) as events,
        ):
            async for _ in events:
                await stuck.wait()
                break  # leaving the block cancels the run: the chain is cut
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    assert paused.status == "paused"
    assert paused.model_calls == 3  # the plan, the clerk's reply, its judge
    ended = _ended(records)
    assert ended.status == "cancelled"
    assert ended.estimated_usage == Usage()
    assert ended.model_calls == paused.model_calls
    assert ended.usage_by_role == paused.usage_by_role
    assert (ended.usage, ended.model_calls) == _answered(records)


@pytest.mark.parametrize(("anyio_backend", "kind"), CASES)
async def test_a_team_stopped_under_its_run_counts_its_planner_guards_judge(
    anyio_backend: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    judging, held = held_until_cut()
    quick = ScriptedModel(lambda request: "fine", price=PRICE)
    said: list[Usage] = []

    async def asking(subject: RequestSubject) -> Outcome:
        said.append((await judge(quick, ASK)).usage)
        return Pass()

    team = Team(
        name="stopped",
        planner=Planner(model=ScriptedModel(held, price=PRICE), guardrails=[asking]),
        workers=[Worker(name="w", description="drafts", model=quick)],
        budget=Budget(),
    )
    journal = await open_journal(journal_at(kind, tmp_path, request))
    run_ids: list[str] = []
    endings: list[object] = []
    try:
        async with anyio.create_task_group() as tg, team.start(journal=journal) as running:

            async def run() -> None:
                async with running.stream("draft") as events:
                    async for event in events:
                        if isinstance(event, RunStarted):
                            run_ids.append(event.run_id)
                endings.append(events.ending)

            tg.start_soon(run)
            await judging.wait()  # the judge answered, the planner's call is held
        records = [e.record for e in await journal.read(run_ids[0])]
    finally:
        await journal.close()
    (judged,) = said
    (ending,) = endings  # what the run's reader got, then what the journal holds
    (*_, last) = [r for r in records if isinstance(r, EventRecorded) and r.kind == "RunFailed"]
    for ended in (ending, msgspec.convert(last.event, RunFailed)):
        assert isinstance(ended, RunFailed)
        assert ended.error_type == "RunCancelled"
        assert (ended.usage, ended.model_calls) == (judged, 1)
    assert _answered(records) == (judged, 1)
