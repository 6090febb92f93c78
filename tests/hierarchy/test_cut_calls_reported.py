"""A step cut while an async tool's body runs (a replan, the run's cancel, the step's
timeout) lists that call in its report as ``cut``: it started and may have acted. Before,
the report had no outcome for it at all, so a program reading the result could not tell
a charge may have been made; calls that never started are still not listed."""

from __future__ import annotations

import json

import anyio
import pytest

from regiment.hierarchy import (
    Check,
    Planner,
    RunCompleted,
    RunResult,
    StaleReportDropped,
    Team,
    ToolCallFinished,
    ToolFailed,
    ToolOutcome,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.tools import ApprovalDecision, ApprovalRequest, Toolset, tool

from ..jump_clock import NEVER, skip

pytestmark = pytest.mark.anyio

_CUT_TEXT = (
    "started, cut before it finished: what it did is not known (tool 'charge' may have "
    "acted; check before running it again, with its idempotency key if it has one)"
)
_CUT = ToolOutcome(
    tool="charge",
    call_id="c1",
    arguments={"order": "7"},
    content=_CUT_TEXT,
    is_error=True,
    error_type="cut",
)


class Till:
    """A charge whose body acts, then awaits forever; the probe (when planned) answers
    only once the charge has been made, and its check fails, so the planner replans."""

    def __init__(self, *, probe: bool = False, calls: tuple[str, ...] = ("charge",)) -> None:
        self.charged = anyio.Event()
        self.asked = anyio.Event()  # the approver was asked to decide on a refund
        self.probe = probe
        self.calls = calls  # the tools the till's reply calls, at once

    def tools(self) -> Toolset:
        charged = self.charged

        @tool
        async def charge(order: str) -> str:
            """Charges the order's card."""
            charged.set()  # the side effect, before the cut
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        @tool
        async def notify(order: str) -> str:
            """Tells the customer."""
            return "told"

        @tool(requires_approval=True)
        async def refund(order: str) -> str:
            """Refunds the order."""
            raise AssertionError("never approved, never run")

        return Toolset("till", [charge, notify, refund], approver=self.approver)

    async def approver(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.set()
        await anyio.sleep_forever()  # a decision that never comes
        raise AssertionError("unreachable")

    async def brain(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            steps = [{"description": "charge order 7", "worker": "till"}]
            if self.probe:
                steps.insert(0, {"description": "probe", "worker": "prober", "check": "no"})
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"description": "say sorry", "worker": "prober"}]})
        if request.role == "worker" and request.worker == "till":
            calls = tuple(
                ToolCallPart(id=f"c{n}", name=name, arguments={"order": "7"})
                for n, name in enumerate(self.calls, 1)
            )
            return ModelResponse(parts=calls, stop_reason="tool_use", model="scripted")
        if request.role == "worker" and "probe" in request.messages[0].text:
            await self.charged.wait()
            return "order 7 is not eligible"
        return "done"

    def team(self, step_timeout: float | None = None) -> Team:
        model = ScriptedModel(self.brain)
        till = Worker(
            name="till",
            description="charges",
            model=model,
            tools=self.tools(),
            step_timeout=step_timeout,
        )
        prober = Worker(name="prober", description="probes", model=model)
        return Team(
            name="shop",
            planner=Planner(model=model),
            workers=[till, prober],
            checks={"no": Check(description="never passes", predicate=lambda r: False)},
        )


@pytest.mark.jump_clock
async def test_a_step_timeout_reports_the_call_it_cut_mid_body() -> None:
    finished: list[ToolCallFinished] = []
    # The timeout is never reached in real time (a short one could fire before the step
    # reached its charge: no call cut, so none to report); once the charge hangs, the
    # clock is moved past it, so the timeout fires while it waits.
    till = Till()

    async def time_out_once_it_charges() -> None:
        await till.charged.wait()
        await skip(NEVER)

    async with till.team(step_timeout=NEVER).start() as running, anyio.create_task_group() as tg:
        tg.start_soon(time_out_once_it_charges)
        async with running.stream("charge order 7") as events:
            async for event in events:
                if isinstance(event, ToolCallFinished):
                    finished.append(event)
        ending = events.ending
    assert till.charged.is_set(), "the step timed out before its charge ran"
    assert isinstance(ending, RunCompleted)
    result = ending.result
    (step,) = [s for s in result.steps if s.step_id == "s1"]
    assert step.status == "timed_out"
    assert step.tool_outcomes == (_CUT,)
    (failed,) = [e for e in result.events if isinstance(e, ToolFailed)]
    assert (failed.tool, failed.error_type, failed.message) == ("charge", "cut", _CUT_TEXT)
    # The live event said "cancelled", which did not tell a cut body from one never run.
    assert [(e.tool, e.outcome) for e in finished] == [("charge", "cut")]


async def test_a_replan_reports_the_call_it_cut_mid_body() -> None:
    result = await Till(probe=True).team().run("charge order 7 if it is eligible")
    (dropped,) = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert (dropped.step_id, dropped.status) == ("s2", "cancelled")
    assert dropped.tool_outcomes == (_CUT,)


async def _cancelled(till: Till, *, asked: bool = False) -> RunResult:
    """The till's run, cancelled once its charge was made (with ``asked``: once the
    approver was asked about the refund)."""
    async with till.team().start() as running:
        async with running.stream("charge order 7") as events:
            async for _ in events:
                await (till.asked if asked else till.charged).wait()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    return ending.result


async def test_a_cancelled_run_reports_the_call_it_cut_mid_body() -> None:
    (step,) = (await _cancelled(Till())).steps
    assert (step.status, step.tool_outcomes) == ("cancelled", (_CUT,))


async def test_a_cut_reports_a_sibling_that_finished_and_not_one_never_started() -> None:
    # notify finished before the cut; refund waited for its turn to be decided (its
    # sibling charge was working), so its body never started: it is not listed.
    (step,) = (await _cancelled(Till(calls=("charge", "notify", "refund")))).steps
    notified = ToolOutcome(tool="notify", call_id="c2", arguments={"order": "7"}, content="told")
    assert step.tool_outcomes == (_CUT, notified)


async def test_a_call_waiting_for_its_approver_is_not_reported_cut() -> None:
    (step,) = (await _cancelled(Till(calls=("refund",)), asked=True)).steps
    assert step.status == "cancelled"
    assert step.tool_outcomes == ()
