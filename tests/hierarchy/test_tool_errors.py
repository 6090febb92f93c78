"""A tool that raises: the model is told, the run says so (``ToolFailed``), the log says
so; and with ``on_tool_error="raise"`` (on the tool or the worker) the step fails."""

from __future__ import annotations

import logging

import anyio
import pytest

from regiment.errors import ConfigError, StepFailed
from regiment.hierarchy import (
    Budget,
    Event,
    Planner,
    StepCompleted,
    StepErrored,
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
from regiment.tools import OnToolError, Tool, tool

from .brains import Brain, plan_json, tool_results

pytestmark = pytest.mark.anyio


def divide_tool(on_tool_error: OnToolError | None = None) -> Tool[..., object]:
    @tool(on_tool_error=on_tool_error)
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    return divide


async def divide_by_zero(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if not results:
        return tool_call_response("divide", {"a": 1, "b": 0}, call_id="c1")
    return f"the tool said: {results[0].content}"


def team(brain: Brain, tool_: Tool[..., object], on_tool_error: OnToolError = "tell_model") -> Team:
    model = ScriptedModel(brain)
    billing = Worker(
        name="billing",
        description="does sums",
        model=model,
        tools=[tool_],
        on_tool_error=on_tool_error,
    )
    return Team(name="t", planner=Planner(model=model), workers=[billing], budget=Budget(replans=0))


async def events_of(made: Team) -> list[Event]:
    async with made.start() as running, running.stream("divide") as events:
        return [event async for event in events]


async def test_by_default_the_model_is_told_and_everyone_else_sees_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    brain = Brain([plan_json({"description": "divide one by zero"})], work=divide_by_zero)
    with caplog.at_level(logging.DEBUG, logger="regiment"):
        seen = await events_of(team(brain, divide_tool()))
    failed = [e for e in seen if isinstance(e, ToolFailed)]
    assert len(failed) == 1
    event = failed[0]
    assert (event.worker, event.step_id, event.tool, event.call_id) == (
        "billing",
        "s1",
        "divide",
        "c1",
    )
    assert (event.error_type, event.message) == (
        "ZeroDivisionError",
        "ZeroDivisionError: division by zero",
    )
    assert event.plan_version == 1
    # Announced before the step's own outcome, which still completes: the model was told.
    completed = next(e for e in seen if isinstance(e, StepCompleted))
    assert seen.index(event) < seen.index(completed)
    assert completed.output == "the tool said: ZeroDivisionError: division by zero"
    warnings = [r for r in caplog.records if r.name == "regiment.worker"]
    assert [r.levelno for r in warnings] == [logging.WARNING]
    record = warnings[0]
    # Its type, not its message: an exception's message may quote the user's data.
    assert record.getMessage() == "billing s1: divide failed: ZeroDivisionError"
    assert record.__dict__["run_id"] == event.run_id
    assert (record.__dict__["step_id"], record.__dict__["worker"], record.__dict__["tool"]) == (
        "s1",
        "billing",
        "divide",
    )
    # The traceback is logged too, at debug level, by the tools room.
    traced = [r for r in caplog.records if r.name == "regiment.tools"]
    assert traced[0].exc_info is not None
    assert traced[0].exc_info[0] is ZeroDivisionError


@pytest.mark.parametrize(
    ("tool_setting", "worker_setting", "fails"),
    [
        (None, "tell_model", False),
        (None, "raise", True),
        ("raise", "tell_model", True),
        ("tell_model", "raise", False),  # the tool's own setting wins
        ("raise", "raise", True),
    ],
)
async def test_on_tool_error_raise_fails_the_step(
    tool_setting: OnToolError | None, worker_setting: OnToolError, fails: bool
) -> None:
    brain = Brain([plan_json({"description": "divide one by zero"})], work=divide_by_zero)
    made = team(brain, divide_tool(tool_setting), worker_setting)
    if not fails:
        assert (await made.run("divide")).status == "completed"
        assert len(brain.worker_requests) == 2  # the model got the error and answered
        return
    with pytest.raises(StepFailed) as info:
        await made.run("divide")
    assert len(brain.worker_requests) == 1  # the model never saw the error: the step ended
    message = str(info.value)
    assert "ToolError: tool 'divide' failed: ZeroDivisionError: division by zero" in message


async def test_a_failed_step_still_names_the_tool_call_in_its_events() -> None:
    brain = Brain([plan_json({"description": "divide one by zero"})], work=divide_by_zero)
    made = team(brain, divide_tool("raise"))
    made = Team(name="t", planner=made.planner, workers=made.workers, budget=Budget(replans=0))
    async with made.start() as running, running.stream("divide") as events:
        seen = [event async for event in events]
    kinds = [type(e).__name__ for e in seen]
    assert kinds.index("ToolFailed") < kinds.index("StepErrored")
    errored = next(e for e in seen if isinstance(e, StepErrored))
    assert errored.status == "failed"
    assert errored.error.startswith("ToolError: tool 'divide' failed: ZeroDivisionError")


async def test_a_refused_call_is_not_a_raise(caplog: pytest.LogCaptureFixture) -> None:
    # Invalid arguments are the model's mistake: told to the model even under "raise".
    async def bad_arguments(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("divide", {"a": "one", "b": 2}, call_id="c1")
        return "gave up"

    brain = Brain([plan_json({"description": "divide"})], work=bad_arguments)
    with caplog.at_level(logging.INFO, logger="regiment"):
        seen = await events_of(team(brain, divide_tool("raise"), "raise"))
    failed = [e for e in seen if isinstance(e, ToolFailed)]
    assert [f.error_type for f in failed] == ["invalid_arguments"]
    # Strict: "one" is not coerced, and the model reads why in its next request.
    told = tool_results(brain.worker_requests[1])
    assert [(p.is_error, p.content) for p in told] == [
        (
            True,
            "invalid arguments for tool 'divide': a: Input should be a valid integer (got \"one\")",
        )
    ]
    assert any(isinstance(e, StepCompleted) for e in seen)
    levels = [r.levelno for r in caplog.records if r.name == "regiment.worker"]
    assert levels == [logging.INFO]


async def test_a_tool_that_timed_out_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # A timed-out call (the tool hung: an outage, as much as a tool that raised) was
    # logged at INFO, as a call the model got wrong: at the usual WARNING level, unseen.
    @tool(timeout=0.05)
    async def divide(a: int, b: int) -> float:
        """Divide a by b."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    brain = Brain([plan_json({"description": "divide"})], work=divide_by_zero)
    with caplog.at_level(logging.INFO, logger="regiment"):
        seen = await events_of(team(brain, divide))
    assert [e.error_type for e in seen if isinstance(e, ToolFailed)] == ["timeout"]
    logged = [r for r in caplog.records if r.name == "regiment.worker"]
    assert [r.levelno for r in logged] == [logging.WARNING]
    assert logged[0].getMessage().startswith("billing s1: divide failed: timed out after 0.05s")


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="on_tool_error must be 'tell_model', 'raise' or None"):
        tool(name="noop", on_tool_error="explode")(lambda: None)  # type: ignore[call-overload]
    brain = Brain([])
    with pytest.raises(ConfigError, match="worker 'billing': on_tool_error must be"):
        team(brain, divide_tool(), "explode")  # type: ignore[arg-type]
