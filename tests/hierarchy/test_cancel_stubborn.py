"""A step whose tool does not stop when the step is cancelled: the step still ends.

A tool that shields itself (or swallows the cancel) finishes its call anyway; the
worker must not take that as a reason to call its model again. A tool that goes on
past its worker's ``cancel_grace`` is given up: the step is reported without it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    Planner,
    RunResult,
    StaleReportDropped,
    Team,
    ToolFailed,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import Tool, tool

from ..jump_clock import NEVER, skip
from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, replan_team

pytestmark = pytest.mark.anyio


class Shielded:
    """An async tool that, once called, finishes only when released, cancelled or not:
    it shields itself, or (``swallows``) catches every cancel and waits on."""

    def __init__(self, *, swallows: bool = False) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

        @tool
        async def hold() -> str:
            """Holds until released, whatever happens to its caller."""
            self.entered.set()
            if not swallows:
                with anyio.CancelScope(shield=True):
                    await self.release.wait()
            while not self.release.is_set():
                try:
                    await self.release.wait()
                except anyio.get_cancelled_exc_class():
                    pass  # the bug this test is about: a tool that swallows its cancel
            return "finished anyway"

        self.tool: Tool[..., object] = hold


class GivenUp(logging.Handler):
    """Sets ``seen`` when a worker logs that it gave a step up."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = anyio.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.seen.set()


def _holding_brain(
    plans: Sequence[str], shielded: Shielded, calls: list[str]
) -> Callable[[str, list[ToolResultPart], ModelRequest], Awaitable[ModelResponse | str]]:
    """A worker script that calls ``hold`` at every turn of the step 'hold'; other
    steps answer once the hold has started."""

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description != "hold":
            await shielded.entered.wait()  # the probe answers once the hold started
            return f"did: {description}"
        calls.append(description)
        return tool_call_response("hold", {})  # again and again, if it is asked again

    return work


async def _release_once_cut(shielded: Shielded) -> None:
    """Let the held call finish once the cancel has reached its step (all is quiet)."""
    await shielded.entered.wait()
    await anyio.wait_all_tasks_blocked()
    shielded.release.set()


async def test_a_step_cancelled_with_its_run_calls_its_model_no_more() -> None:
    shielded, calls = Shielded(), list[str]()
    brain = Brain([plan_json({"description": "hold"})])
    brain.work = _holding_brain(brain.plans, shielded, calls)
    team = replan_team(brain, tools=[shielded.tool])
    async with team.start() as running, anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:

            async def cancel() -> None:
                await shielded.entered.wait()
                scope.cancel()
                await _release_once_cut(shielded)

            tg.start_soon(cancel)
            await running.run("goal")
        await anyio.wait_all_tasks_blocked()
    assert calls == ["hold"]  # the call that asked for the tool, and none after it


async def test_a_step_its_team_stop_cancels_calls_its_model_no_more() -> None:
    # Leaving team.start() cancels the step from outside (not the planner): a tool
    # that finishes anyway must not start another model call (a model that awaits
    # nothing, as here, would not notice the cancel) and another call of itself.
    shielded, calls = Shielded(), list[str]()
    brain = Brain([plan_json({"description": "hold"})])
    brain.work = _holding_brain(brain.plans, shielded, calls)
    team = replan_team(brain, tools=[shielded.tool])
    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:

            async def stop() -> None:
                await shielded.entered.wait()
                scope.cancel()
                await _release_once_cut(shielded)

            tg.start_soon(stop)
            async with team.start() as running:
                await running.run("goal")
    assert calls == ["hold"]


async def test_a_step_a_replan_cancels_calls_its_model_no_more() -> None:
    shielded, calls = Shielded(), list[str]()
    brain = Brain([plan_json(PROBE, {"id": "s2", "description": "hold"}), RECOVER])
    brain.work = _holding_brain(brain.plans, shielded, calls)
    team: Team = replan_team(brain, tools=[shielded.tool])
    async with team.start() as running, anyio.create_task_group() as tg:
        tg.start_soon(_release_once_cut, shielded)
        result: RunResult = await running.run("goal")
    assert calls == ["hold"]
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.status) for e in dropped] == [("s2", "cancelled")]


@asynccontextmanager
async def _given_up(logger_name: str = "regiment.worker") -> AsyncIterator[GivenUp]:
    handler = GivenUp()
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.mark.jump_clock
@pytest.mark.parametrize("swallows", [False, True], ids=["shields", "swallows"])
async def test_a_tool_that_ignores_the_cancel_is_given_up_after_the_grace(swallows: bool) -> None:
    shielded, calls = Shielded(swallows=swallows), list[str]()
    brain = Brain([plan_json({"description": "hold"})])
    brain.work = _holding_brain(brain.plans, shielded, calls)
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="w", model=model, tools=[shielded.tool], cancel_grace=0.1)
    team = Team(
        name="t", planner=Planner(model=model), workers=[worker], budget=Budget(wall_clock=NEVER)
    )  # never reached in real time (a short one could end the run before the tool ran)

    async def run_out_once_it_holds() -> None:
        await shielded.entered.wait()
        await skip(NEVER)  # the wall clock runs out while the tool holds

    async with _given_up() as log, team.start() as running:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_out_once_it_holds)
            result = await running.run("goal")  # before the tool has stopped
        shielded.release.set()  # now it may: the team's stop waits for it
    assert (result.status, result.budget_exhausted) == ("partial", "wall_clock")
    failed = [e for e in result.events if isinstance(e, ToolFailed)]
    # the step's report (cancelled: the run is winding down) says so in the run's events
    assert [(e.tool, e.error_type) for e in failed] == [("hold", "abandoned")]
    assert failed[0].message.startswith("abandoned: tool 'hold' did not stop within 0.1s")
    (message,) = log.messages
    assert message.startswith("w s1: tool 'hold' did not stop within 0.1s")
    # in process its runner goes on (a Ray worker's replica is restarted instead)
    assert "without it; it still runs, and the team's stop will wait for it. " in message
    assert "re-raise CancelledError" in message
    assert calls == ["hold"]


async def test_a_step_given_up_is_reported_once_and_its_run_goes_on() -> None:
    shielded, calls = Shielded(), list[str]()
    async with _given_up() as log:

        async def work(
            description: str, results: list[ToolResultPart], request: ModelRequest
        ) -> ModelResponse | str:
            if description == "recover":  # after the replan: once s2 was given up
                await log.seen.wait()
                shielded.release.set()  # s2's runner ends now, and must not report again
                await anyio.wait_all_tasks_blocked()
                return "recovered"
            return await holding(description, results, request)

        brain = Brain([plan_json(PROBE, {"id": "s2", "description": "hold"}), RECOVER], work=work)
        holding = _holding_brain(brain.plans, shielded, calls)
        model = ScriptedModel(brain)
        worker = Worker(
            name="w", description="w", model=model, tools=[shielded.tool], cancel_grace=0.1
        )
        team = replan_team(brain, tools=[shielded.tool])
        team = Team(name="t", planner=team.planner, workers=[worker], checks=team.checks)
        async with team.start() as running:
            result = await running.run("goal")
    assert result.committed == ("s3",)
    assert result.rejected == ("s1",)
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.status) for e in dropped] == [("s2", "cancelled")]
    assert calls == ["hold"]


@pytest.mark.parametrize("step_timeout", [300.0, None], ids=["step_timeout", "no_step_timeout"])
async def test_a_team_stop_held_by_a_tool_that_ignores_the_cancel_says_so(
    step_timeout: float | None,
) -> None:
    # Without a step_timeout too: the stop was held silently (no task saw the worker stop).
    shielded, calls = Shielded(swallows=True), list[str]()
    brain = Brain([plan_json({"description": "hold"})])
    brain.work = _holding_brain(brain.plans, shielded, calls)
    model = ScriptedModel(brain)
    tools, grace = [shielded.tool], 0.1
    worker = Worker(
        name="w",
        description="w",
        model=model,
        tools=tools,
        cancel_grace=grace,
        step_timeout=step_timeout,
    )
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    async with _given_up("regiment.team") as log, anyio.create_task_group() as tg:

        async def release_once_told() -> None:
            await log.seen.wait()
            shielded.release.set()

        tg.start_soon(release_once_told)
        with anyio.CancelScope() as scope:  # the team stops with the run still going
            async with team.start() as running:
                tg.start_soon(_cancel_when, shielded.entered, scope)
                await running.run("goal")
    assert calls == ["hold"]
    (message,) = log.messages
    assert message.startswith("the team is stopping, but tool 'hold' of step s1 (worker 'w', run")
    assert "ignores cancellation and still runs" in message
    assert "re-raise CancelledError" in message


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
