"""A tool body or a model that raises asyncio's ``CancelledError`` on its own (nothing
cancelled its call), or another ``BaseException`` such as ``GeneratorExit``, fails its
call; a check that does fails, and a ``Prompts`` method that does fails its step or run.

Before, on asyncio the ``CancelledError`` ended the worker's task as if it had been
cancelled: that step was reported "cancelled: worker stopped", and every later run of
the started team failed with ``ActorStopped: actor 't/w' has stopped``. On trio it (or
a ``GeneratorExit``) left the team's task group and ended ``team.start()`` itself. A
model's call that raised it did the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio
import pytest
from pydantic import BaseModel, field_validator

from regiment.errors import RunError, StepFailed
from regiment.hierarchy import (
    Budget,
    Check,
    CheckFailed,
    Planner,
    PlanStep,
    Prompts,
    RunCompleted,
    RunFailed,
    RunningTeam,
    StepContext,
    StepReport,
    Team,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Approver,
    Tool,
    Toolset,
    tool,
)

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


@tool
async def cancels_itself(n: int) -> int:
    """Gives up the way a careless library does (an async body, in the loop's task)."""
    if n == 1:
        raise asyncio.CancelledError
    return n


@tool
def cancels_in_thread(n: int) -> int:
    """The same, in a sync body run in a worker thread."""
    if n == 1:
        raise asyncio.CancelledError
    return n


@tool(timeout=5, retries=2)
async def exits_generator(n: int) -> int:
    """Raises GeneratorExit, under a timeout and retries (the attempt loop's path)."""
    if n == 1:
        raise GeneratorExit
    return n


@tool
def exits_generator_in_thread(n: int) -> int:
    """Raises GeneratorExit in a sync body: set on the thread's future, asyncio threw it
    into the waiting coroutines, closing them all up to anyio.run, which raised it."""
    if n == 1:
        raise GeneratorExit
    return n


_CANCELLED = (
    "CancelledError: the tool raised CancelledError while nothing had cancelled its call; "
    "a tool must not raise it itself (raise an Exception, such as TimeoutError or RuntimeError)"
)
_GENERATOR = (
    "GeneratorExit: the tool raised GeneratorExit (a BaseException, as only interrupts and "
    "cancellations are); a tool must not raise it itself (raise an Exception, such as "
    "TimeoutError or RuntimeError)"
)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (cancels_itself, _CANCELLED),
        (cancels_in_thread, _CANCELLED),
        (exits_generator, _GENERATOR),
        (exits_generator_in_thread, _GENERATOR),
    ],
)
async def test_a_base_exception_a_tool_raises_is_one_failed_call(
    body: Tool[..., int], says: str
) -> None:
    result = await body.call({"n": 1}, call_id="c")
    assert result.is_error
    assert result.content == says
    assert result.attempts == 1  # never retried


@pytest.mark.parametrize(
    "body", [cancels_itself, cancels_in_thread, exits_generator, exits_generator_in_thread]
)
async def test_the_worker_goes_on_serving_runs(body: Tool[..., int]) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response(body.name, {"n": 1 if "bad" in description else 2})
        return f"the tool said: {results[0].content}"

    model = ScriptedModel(
        Brain(
            [plan_json({"description": "bad call"}), plan_json({"description": "good call"})],
            work=work,
        )
    )
    worker = Worker(name="w", description="calls", model=model, tools=[body])
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget(replans=0))
    async with team.start() as running:
        first = await running.run("first")
        second = await running.run("second")
    assert first.status == second.status == "completed"
    assert first.steps[0].tool_outcomes[0].is_error
    assert second.steps[0].output == "the tool said: 2"


_MODEL_SAYS = (
    "step s1 (x) ended failed: ModelError: model 'scripted' raised CancelledError while "
    "nothing had cancelled its call; a Model must raise an Exception for a failed call "
    "(regiment.errors.ModelError, say), never this"
)


async def _first_run_fails(running: RunningTeam, streamed: bool) -> str:
    """The first run's error message, read from its RunFailed (streamed) or its error."""
    if not streamed:
        with pytest.raises(StepFailed) as caught:
            await running.run("first")
        return str(caught.value)
    async with running.stream("first") as events:
        last = [event async for event in events][-1]
    assert isinstance(last, RunFailed)
    return last.message


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_model_that_raises_cancelled_error_fails_the_step_not_the_worker(
    streamed: bool,
) -> None:
    calls = 0

    async def flaky(request: ModelRequest) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise asyncio.CancelledError
        return text_response("done")

    planner = ScriptedModel(Brain([plan_json({"description": "x"})] * 2))
    worker = Worker(name="w", description="works", model=ScriptedModel(flaky))
    team = Team(
        name="t", planner=Planner(model=planner), workers=[worker], budget=Budget(replans=0)
    )
    async with team.start() as running:
        message = await _first_run_fails(running, streamed)
        second = await running.run("second")
    assert message.startswith(_MODEL_SAYS)
    assert second.status == "completed"


@tool(requires_approval=True)
def pay(n: int) -> int:
    """Pays n, once someone approves."""
    return n


async def _cancels(request: ApprovalRequest) -> ApprovalDecision:
    if request.arguments["n"] == 1:
        raise asyncio.CancelledError
    return Approve()


def _exits_in_thread(request: ApprovalRequest) -> ApprovalDecision:
    # A plain approver runs in a thread: on asyncio its GeneratorExit, thrown into the
    # waiting coroutines, closed them all and came out of anyio.run.
    if request.arguments["n"] == 1:
        raise GeneratorExit
    return Approve()


@pytest.mark.parametrize(
    ("approver", "kind"), [(_cancels, "CancelledError"), (_exits_in_thread, "GeneratorExit")]
)
async def test_an_approver_that_raises_cancelled_error_fails_the_step_not_the_worker(
    approver: Approver, kind: str
) -> None:

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("pay", {"n": 1 if "bad" in description else 2})
        return f"paid: {results[0].content}"

    plans = [plan_json({"description": "bad call"}), plan_json({"description": "good call"})]
    brain = Brain(plans, work=work)
    model = ScriptedModel(brain)
    tools = Toolset("w", [pay], approver=approver)
    worker = Worker(name="w", description="pays", model=model, tools=tools)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget())
    async with team.start() as running:
        with pytest.raises(StepFailed) as caught:
            await running.run("first")
        second = await running.run("second")
    # A RuntimeError, so replanned (three times by default) like a passing failure,
    # where an approver's Exception ends the run at once: it would fail every call.
    assert caught.value.cause.startswith(
        f"step s1 (bad call) ended failed: ApprovalError: the approver of tool 'pay' raised {kind}"
    )
    assert "; an approver (Toolset(approver=" in caught.value.cause
    assert caught.value.fatal
    assert len(brain.plan_requests) == 2  # one a run: no replan
    assert second.steps[0].output == "paid: 2"


async def test_a_cancel_of_the_run_while_its_approver_waits_still_cancels_it() -> None:
    # The approver's (and the key function's) own CancelledError is a bug of theirs;
    # the one a cancel of the run delivers is not: the run is cancelled, not failed.
    asked, cancelled = anyio.Event(), anyio.Event()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    keyed = Tool(pay.__wrapped__, requires_approval=lambda a: True, idempotency_key=("n",))
    brain = Brain([plan_json({"description": "bad call"})] * 2, work=_pays)
    model = ScriptedModel(brain)
    tools = Toolset("w", [keyed], approver=approver)
    worker = Worker(name="w", description="pays", model=model, tools=tools)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget())
    async with team.start() as running, running.stream("first") as events:
        async for _ in events:
            await asked.wait()
            break  # leaving the stream cancels the run
    assert cancelled.is_set()
    ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    assert len(brain.plan_requests) == 1


def _refuses(report: StepReport) -> bool:
    raise asyncio.CancelledError  # a check that gives up the careless way


def _rejects(report: StepReport) -> bool:
    return False


def _explains(report: StepReport) -> str:
    raise asyncio.CancelledError


_CHECK_SAYS = (
    "raised CancelledError while nothing had cancelled its call; a check returns False, or "
    "raises an Exception, for a report it does not accept"
)


@pytest.mark.parametrize(
    ("predicate", "explain", "reason"),
    [
        (_refuses, None, f"check could not read step s1: it {_CHECK_SAYS}"),
        (_rejects, _explains, f"not met: never (explain failed: it {_CHECK_SAYS})"),
    ],
)
async def test_a_check_that_raises_cancelled_error_is_a_failed_check(
    predicate: Callable[[StepReport], bool],
    explain: Callable[[StepReport], str] | None,
    reason: str,
) -> None:
    # It ended the run's planner task: the run hung, and the next run of the team
    # failed with "actor 't/w' has stopped".
    checked = plan_json({"description": "x", "check": "c"})
    brain = Brain([checked, plan_json({"description": "y"}), plan_json({"description": "z"})])
    model = ScriptedModel(brain)
    check = Check(description="never", predicate=predicate, explain=explain)
    worker = Worker(name="w", description="works", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], checks={"c": check})
    async with team.start() as running:
        first = await running.run("first")
        second = await running.run("second")
    (failed,) = [e for e in first.events if isinstance(e, CheckFailed)]
    assert failed.reason == reason
    assert first.status == second.status == "completed"
    assert [p.version for p in first.plans] == [1, 2]  # the failed check replanned


class _Careless(Prompts):
    def step_request(self, *, step: PlanStep, context: StepContext) -> str:
        if "bad" in step.description:
            raise asyncio.CancelledError
        return super().step_request(step=step, context=context)


@dataclass(frozen=True, kw_only=True, slots=True)
class _CarelessSynthesis(Prompts):
    def synthesizer_system(self, *, team: str) -> str:
        raise GeneratorExit


async def test_prompts_that_raise_cancelled_error_fail_the_step_not_the_worker() -> None:
    # The worker's task ended: the run hung, later runs found 't/w' stopped.
    plans = [plan_json({"description": "bad"}), plan_json({"description": "good"})]
    brain = Brain(plans)
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="works", model=model)
    team = Team(
        name="t",
        planner=Planner(model=model, prompts=_Careless()),
        workers=[worker],
        budget=Budget(),
    )
    async with team.start() as running:
        with pytest.raises(StepFailed) as caught:
            await running.run("first")
        second = await running.run("second")
    # It was a RuntimeError, replanned as no other failure of step_request is.
    assert caught.value.cause == (
        "step s1 (bad) ended failed: the Prompts hook _Careless.step_request raised "
        "CancelledError while nothing had cancelled its call; fix that method (it must "
        "return the text), or remove it to use regiment's default"
    )
    assert caught.value.fatal
    assert len(brain.plan_requests) == 2  # one a run: no replan
    assert second.status == "completed"


async def test_prompts_that_raise_generator_exit_fail_the_run_not_the_team() -> None:
    model = ScriptedModel(Brain([plan_json({"description": "x"})] * 2))
    worker = Worker(name="w", description="works", model=model)
    planner = Planner(model=model, prompts=_CarelessSynthesis())
    team = Team(name="t", planner=planner, workers=[worker])
    async with team.start() as running:
        for goal in ("first", "second"):  # the team is still there for the second
            with pytest.raises(
                RunError, match=r"_CarelessSynthesis\.synthesizer_system raised GeneratorExit"
            ):
                await running.run(goal)


def _gives_up(arguments: Mapping[str, object]) -> str:
    raise asyncio.CancelledError


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"idempotency_key": _gives_up}, "the idempotency_key function"),
        ({"requires_approval": _gives_up}, "the requires_approval predicate"),
    ],
)
async def test_a_tool_option_function_that_raises_cancelled_error_fails_the_step(
    options: dict[str, object], says: str
) -> None:
    # It ended the worker's task: "ended cancelled: worker stopped", then every later
    # run of the team failed with "actor 't/w' has stopped".
    paying = Tool(pay.__wrapped__, **options)  # type: ignore[arg-type]
    plans = [plan_json({"description": "bad call"})] * 2
    brain = Brain(plans, work=_pays)
    model = ScriptedModel(brain)
    tools = Toolset("w", [paying], approver=_approves)
    worker = Worker(name="w", description="pays", model=model, tools=tools)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget())
    async with team.start() as running:
        for goal in ("first", "second"):  # the worker is still there for the second
            with pytest.raises(StepFailed) as caught:
                await running.run(goal)
            # It was a RuntimeError, replanned (three times) where an Exception is not.
            assert caught.value.cause == (
                f"step s1 (bad call) ended failed: ToolError: {says} of tool 'pay' raised "
                "CancelledError while nothing had cancelled its call; fix it to return "
                + ("the key (a str)" if "idempotency" in says else "True or False")
                + " for the call's arguments"
            )
            assert caught.value.fatal
    assert len(brain.plan_requests) == 2  # one a run: no replan


async def _pays(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    return f"paid: {results[0].content}" if results else tool_call_response("pay", {"n": 1})


async def _approves(request: ApprovalRequest) -> ApprovalDecision:
    return Approve()


class _Answer(BaseModel):
    total: int

    @field_validator("total")
    @classmethod
    def _gives_up(cls, value: int) -> int:
        raise asyncio.CancelledError


async def test_an_answer_validator_that_raises_cancelled_error_fails_the_run() -> None:
    # It came out of run() as a CancelledError, as if the caller had been cancelled.
    brain = Brain([plan_json({"description": "x"})] * 2, synthesis='{"total": 1}')
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="works", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], output_type=_Answer)
    async with team.start() as running:
        for goal in ("first", "second"):
            with pytest.raises(RunError) as caught:
                await running.run(goal)
            assert "RuntimeError: a validator of " in str(caught.value)
            assert str(caught.value).endswith(
                "_Answer raised CancelledError while nothing had cancelled its call; it must "
                "return, or raise a ValueError"
            )
