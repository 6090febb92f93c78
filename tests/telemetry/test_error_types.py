"""``error.type`` on step and tool spans is the exception's type or a defined code,
never a status word (decoded from real OTLP)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence

import anyio
import pytest

from regiment.errors import RegimentError
from regiment.hierarchy import (
    Guardrail,
    Pass,
    Planner,
    PlanStep,
    Prompts,
    StepContext,
    Team,
    ToolCallSubject,
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
from regiment.telemetry import Telemetry, configure_tracing, semconv
from regiment.tools import Tool, tool

from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio

STATUS_WORDS = {"failed", "timed_out", "error", "cancelled", "done"}


class LookupBroke(RuntimeError):
    """What the worker's model raises."""


@tool
def lookup(customer: str) -> str:
    """Find a customer."""
    raise ValueError(f"no customer {customer}")


@tool
async def wait_forever(customer: str) -> str:
    """A lookup that never answers."""
    await anyio.Event().wait()
    return customer


def _team(
    telemetry: Telemetry,
    worker_brain: Callable[[ModelRequest], ModelResponse],
    step_timeout: float | None = None,
    tools: tuple[Tool[..., object], ...] = (lookup, wait_forever),
    prompts: Prompts | None = None,
    guardrails: Sequence[Guardrail | Callable[..., object]] = (),
) -> Team:
    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response(json.dumps({"steps": [{"id": "s1", "description": "look up"}]}))
        if request.role == "worker":
            return worker_brain(request)
        return text_response("answer")

    model = ScriptedModel(brain)
    worker = Worker(
        name="w",
        description="w",
        model=model,
        tools=list(tools),
        max_iterations=2,
        step_timeout=step_timeout,
        guardrails=list(guardrails),
    )
    planner = Planner(model=model, prompts=prompts or Prompts())
    return Team(name="t", planner=planner, workers=[worker], telemetry=telemetry)


async def _spans(
    worker_brain: Callable[[ModelRequest], ModelResponse],
    step_timeout: float | None = None,
    prompts: Prompts | None = None,
    guardrails: Sequence[Guardrail | Callable[..., object]] = (),
    capture: bool = False,
) -> list[ReceivedSpan]:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("errors", endpoint=receiver.endpoint, set_global=False)
        # How the run ends is not the point here; the spans are.
        with contextlib.suppress(RegimentError):
            telemetry = Telemetry(handle.provider, capture_content=capture)
            team = _team(
                telemetry, worker_brain, step_timeout, prompts=prompts, guardrails=guardrails
            )
            await team.run("go")
        handle.shutdown()
        return list(receiver.spans())


def _raises(request: ModelRequest) -> ModelResponse:
    raise LookupBroke("the lookup service is down")


def _loops(request: ModelRequest) -> ModelResponse:
    return tool_call_response("lookup", {"customer": "ann"})


def _tool_fails_then_answers(request: ModelRequest) -> ModelResponse:
    if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
        return text_response("could not find ann")
    return tool_call_response("lookup", {"customer": "ann"})


async def test_a_step_that_raised_has_the_exception_type() -> None:
    spans = await _spans(_raises)
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert step.attributes["regiment.step.outcome"] == "failed"
    assert step.attributes["error.type"] == f"{LookupBroke.__module__}.LookupBroke"
    assert step.status_code == 2


class BrokenStepRequest(Prompts):
    def step_request(self, *, step: PlanStep, context: StepContext) -> str:
        raise KeyError("tone")


async def test_a_step_a_hook_failed_has_a_public_error_type() -> None:
    # It was regiment.hierarchy._prompts.HookFailed: a private path, not one to match on.
    spans = await _spans(_tool_fails_then_answers, prompts=BrokenStepRequest())
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert step.attributes["error.type"] == "regiment.errors.HookFailed"


async def test_a_step_out_of_iterations_has_a_defined_code() -> None:
    spans = await _spans(_loops)
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert step.attributes["regiment.step.outcome"] == "iteration_limit"
    assert step.attributes["error.type"] == semconv.ERROR_ITERATION_LIMIT


def _hangs(request: ModelRequest) -> ModelResponse:
    return tool_call_response("wait_forever", {"customer": "ann"})


async def test_a_step_out_of_time_has_the_timeout_code() -> None:
    # The tool never returns, so the step's own deadline ends it (the length does not matter).
    spans = await _spans(_hangs, step_timeout=0.05)
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert step.attributes["regiment.step.outcome"] == "timed_out"
    assert step.attributes["error.type"] == semconv.ERROR_TIMEOUT
    assert step.status_code == 2


async def test_a_failed_tool_call_has_the_exception_type() -> None:
    spans = await _spans(_tool_fails_then_answers)
    call = next(s for s in spans if s.name == "execute_tool lookup")
    assert call.attributes["error.type"] == "ValueError"
    assert call.status_code == 2
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert "error.type" not in step.attributes  # the model took the error and answered
    # The tool raised: an exception event, as on every span an exception ended (it had
    # none, nor any trace of the message); the message is content, so only its length.
    assert call.status_message == "ValueError"
    message = call.attributes["regiment.error.message_length"]
    assert isinstance(message, int)
    assert message >= len("no customer ann")
    (event,) = [attributes for name, attributes in call.events if name == "exception"]
    assert event["exception.type"] == "ValueError"
    assert event["regiment.error.code"] == "ValueError"
    assert "exception.message" not in event
    assert "ann" not in str(call.attributes) + str(call.events)


async def test_with_capture_on_a_failed_tool_calls_status_says_why() -> None:
    # Its status said only `ValueError`, though capture was on and the result showed why.
    spans = await _spans(_tool_fails_then_answers, capture=True)
    call = next(s for s in spans if s.name == "execute_tool lookup")
    assert call.status_code == 2
    assert "no customer ann" in call.status_message
    (event,) = [attributes for name, attributes in call.events if name == "exception"]
    message = event["exception.message"]
    assert isinstance(message, str)
    assert "no customer ann" in message


@pytest.mark.parametrize("brain", [_raises, _loops, _tool_fails_then_answers])
async def test_no_error_type_is_a_status_word(
    brain: Callable[[ModelRequest], ModelResponse],
) -> None:
    spans = await _spans(brain)
    types = {s.attributes["error.type"] for s in spans if "error.type" in s.attributes}
    assert types
    assert not types & STATUS_WORDS


async def test_a_failed_run_span_has_the_error_code_and_an_exception_event() -> None:
    spans = await _spans(_raises)
    run = next(s for s in spans if s.name == "invoke_agent t")
    assert run.status_code == 2
    # As on every span an exception ended: error.type qualified, the code short.
    assert run.attributes["error.type"] == "regiment.errors.StepFailed"
    assert run.attributes["regiment.error.code"] == "StepFailed"
    events = [attributes for name, attributes in run.events if name == "exception"]
    assert len(events) == 1
    assert events[0]["exception.type"] == "regiment.errors.StepFailed"
    assert events[0]["regiment.error.code"] == "StepFailed"
    assert "exception.message" not in events[0]  # content, and capture is off
    chat = next(s for s in spans if s.name == "chat scripted" and s.status_code == 2)
    assert chat.attributes["error.type"] == f"{LookupBroke.__module__}.LookupBroke"
    assert chat.attributes["regiment.error.code"] == "LookupBroke"


async def _cancelled_run_span(
    cancel: Callable[[Team, anyio.Event], Awaitable[None]],
) -> ReceivedSpan:
    """The root span of a run cancelled by ``cancel`` once its tool call is waiting."""
    waiting = anyio.Event()

    @tool
    async def hold(customer: str) -> str:
        """A lookup that never answers."""
        waiting.set()
        await anyio.Event().wait()
        return customer

    def brain(request: ModelRequest) -> ModelResponse:
        return tool_call_response("hold", {"customer": "ann"})

    with OtlpReceiver() as receiver:
        handle = configure_tracing("errors", endpoint=receiver.endpoint, set_global=False)
        team = _team(Telemetry(handle.provider), brain, tools=(hold,))
        await cancel(team, waiting)
        handle.shutdown()
        return next(s for s in receiver.spans() if s.name == "invoke_agent t")


async def _cancel_team_run(team: Team, waiting: anyio.Event) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(team.run, "go")
        await waiting.wait()
        tg.cancel_scope.cancel()


async def _cancel_started_run(team: Team, waiting: anyio.Event) -> None:
    async with team.start() as running, anyio.create_task_group() as tg:
        tg.start_soon(running.run, "go")
        await waiting.wait()
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("cancel", [_cancel_team_run, _cancel_started_run])
async def test_a_cancelled_run_reads_cancelled_not_failed(
    cancel: Callable[[Team, anyio.Event], Awaitable[None]],
) -> None:
    # The journal, the service and the command list such a run `cancelled`.
    # Cancelling `team.run` marked its span ERROR (RunCancelled) with status
    # `failed`; cancelling a started team's run left it unset and `cancelled`.
    run = await _cancelled_run_span(cancel)
    assert run.attributes["regiment.run.status"] == "cancelled"
    assert run.attributes["regiment.cancelled"] is True
    assert run.status_code == 0
    assert "error.type" not in run.attributes


async def test_a_guard_that_raised_marks_its_span_with_the_exception_type() -> None:
    # A guard that raised tripped, but its span read like any trip (outcome=trip, status
    # unset): a reader could not tell a guard's verdict from a guard's crash.
    def card_check(call: ToolCallSubject) -> Pass:
        raise ValueError(f"bad card {call.arguments}")

    spans = await _spans(_tool_fails_then_answers, guardrails=[card_check])
    guards = [s for s in spans if s.name == semconv.SPAN_GUARDRAIL]
    assert guards  # one per attempt of the step
    for guard in guards:
        assert guard.attributes[semconv.REGIMENT_GUARDRAIL_OUTCOME] == "trip"
        assert (guard.status_code, guard.status_message) == (2, "ValueError")
        assert guard.attributes["error.type"] == "ValueError"
        assert guard.attributes["regiment.error.message_length"] == len(
            "ValueError: bad card {'customer': 'ann'}"
        )
        assert not any("bad card" in str(v) for v in guard.attributes.values())


async def test_a_step_that_raised_says_why_on_its_own_span() -> None:
    # The exception event was only on the child span that raised (the `chat` span), or on
    # no span at all (a Prompts hook raised before any call): the step span read ERROR with
    # no why. Capture off: the type and code, and of the message only its length.
    spans = await _spans(_raises)
    step = next(s for s in spans if s.name == "invoke_agent w")
    (event,) = [attributes for name, attributes in step.events if name == "exception"]
    assert event["exception.type"] == f"{LookupBroke.__module__}.LookupBroke"
    assert event["regiment.error.code"] == "LookupBroke"
    assert step.attributes["regiment.error.code"] == "LookupBroke"
    message = event["regiment.error.message_length"]
    assert isinstance(message, int)
    assert message >= len("the lookup service is down")
    assert "exception.message" not in event
    assert "service is down" not in str(step.attributes) + str(step.events)


async def test_a_step_a_hook_failed_has_its_exception_event_with_capture_on() -> None:
    spans = await _spans(_tool_fails_then_answers, prompts=BrokenStepRequest(), capture=True)
    step = next(s for s in spans if s.name == "invoke_agent w")
    (event,) = [attributes for name, attributes in step.events if name == "exception"]
    assert event["exception.type"] == "regiment.errors.HookFailed"
    assert event["regiment.error.code"] == "HookFailed"
    message = event["exception.message"]
    assert isinstance(message, str)
    assert "tone" in message


async def test_a_step_that_failed_without_raising_has_no_exception_event() -> None:
    spans = await _spans(_loops)
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert step.status_code == 2
    assert not [name for name, _ in step.events if name == "exception"]
