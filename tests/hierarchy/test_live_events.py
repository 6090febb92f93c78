"""Live events of a streamed run: text deltas of every model call, tool calls as they go."""

from __future__ import annotations

import json

import pytest

from regiment.hierarchy import (
    Event,
    Planner,
    RunCompleted,
    Team,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    Worker,
    event_from_json,
    to_json,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, tool_call_response
from regiment.tools import tool

from .brains import plan_json, tool_results

pytestmark = pytest.mark.anyio

ANSWER = (
    "The invoice total is 42 euros: the two lines add up, the tax is included, "
    "and nothing is left to pay after the refund of last week."
)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def _brain(request: ModelRequest) -> ModelResponse | str:
    match request.role:
        case "planner":
            return plan_json({"description": "add up the invoice", "worker": "clerk"})
        case "worker":
            results = tool_results(request)
            if not results:
                return tool_call_response("add", {"a": 40, "b": 2})
            if len(request.messages) == 3:  # one round of tools done: a failing one next
                return tool_call_response("divide", {"a": 1, "b": 0})
            return "the total is 42"
        case "synthesizer":
            return ANSWER
        case _:
            raise AssertionError(request.role)


def _team(delta_size: int = 8) -> Team:
    model = ScriptedModel(_brain, delta_size=delta_size)
    clerk = Worker(name="clerk", description="adds numbers", model=model, tools=[add, divide])
    return Team(name="books", planner=Planner(model=model), workers=[clerk])


async def _events(team: Team) -> list[Event]:
    async with team.start() as running, running.stream("add up the invoice") as stream:
        return [event async for event in stream]


async def test_the_synthesizers_text_deltas_join_into_the_answer() -> None:
    events = await _events(_team())

    end = events[-1]
    assert isinstance(end, RunCompleted)
    synth = [e for e in events if isinstance(e, TextDelta) and e.role == "synthesizer"]
    assert len(synth) > 5  # it really streamed, in pieces
    assert "".join(d.text for d in synth) == end.result.answer == ANSWER
    assert all(d.run_id == end.result.run_id and d.worker is None for d in synth)
    # the deltas come before the end, and are not part of the result's own events
    assert not any(isinstance(e, TextDelta) for e in end.result.events)


async def test_every_model_call_streams_with_its_role_worker_and_step() -> None:
    events = await _events(_team())

    roles = {(d.role, d.worker, d.step_id) for d in events if isinstance(d, TextDelta)}
    assert roles == {
        ("planner", None, None),
        ("worker", "clerk", "s1"),
        ("synthesizer", None, None),
    }
    planner = "".join(d.text for d in events if isinstance(d, TextDelta) and d.role == "planner")
    assert json.loads(planner)["steps"][0]["worker"] == "clerk"
    worker = "".join(d.text for d in events if isinstance(d, TextDelta) and d.role == "worker")
    assert worker == "the total is 42"


async def test_tool_calls_are_told_as_they_start_and_finish() -> None:
    events = await _events(_team())

    calls = [e for e in events if isinstance(e, ToolCallStarted | ToolCallFinished)]
    assert [(type(e).__name__, e.tool) for e in calls] == [
        ("ToolCallStarted", "add"),
        ("ToolCallFinished", "add"),
        ("ToolCallStarted", "divide"),
        ("ToolCallFinished", "divide"),
    ]
    started, finished = calls[0], calls[1]
    assert isinstance(finished, ToolCallFinished)
    assert (started.worker, started.step_id, started.arguments) == (
        "clerk",
        "s1",
        {"a": 40, "b": 2},
    )
    assert (finished.call_id, finished.outcome) == (started.call_id, "ok")
    assert finished.duration >= 0.0
    failed = calls[3]
    assert isinstance(failed, ToolCallFinished)
    assert (failed.outcome, failed.arguments) == ("ZeroDivisionError", {"a": 1, "b": 0})
    # each call is told before the step that made it is committed
    committed = next(i for i, e in enumerate(events) if type(e).__name__ == "StepCompleted")
    assert events.index(calls[-1]) < committed


async def test_a_run_nobody_streams_gets_no_live_events() -> None:
    team = _team()
    async with team.start() as running:
        result = await running.run("add up the invoice")
        async with running.stream("add up the invoice") as stream:
            streamed = [event async for event in stream]

    assert result.answer == ANSWER
    live = (TextDelta, ToolCallStarted, ToolCallFinished)
    assert not any(isinstance(e, live) for e in result.events)
    assert sum(isinstance(e, TextDelta) for e in streamed) > 0
    # the stream's other events are the result's, in order
    end = streamed[-1]
    assert isinstance(end, RunCompleted)
    kept = [e for e in streamed if not isinstance(e, live)]
    assert [type(e) for e in kept[:-1]] == [type(e) for e in end.result.events]


async def test_live_events_round_trip_through_json() -> None:
    events = await _events(_team())

    live = [e for e in events if isinstance(e, TextDelta | ToolCallStarted | ToolCallFinished)]
    assert {type(e) for e in live} == {TextDelta, ToolCallStarted, ToolCallFinished}
    for event in live:
        assert event_from_json(to_json(event)) == event
    assert json.loads(to_json(live[0]))["type"] == type(live[0]).__name__
