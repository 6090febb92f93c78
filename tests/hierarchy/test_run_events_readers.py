"""Who reads a streamed run's events, and what a reader that lags holds.

Two tasks that read one run's ``RunEvents`` split its events between them (each got
some, neither all); the second is now refused with an error that says what to do. A
reader that lags, or reads nothing until the run ends, held one ``TextDelta`` per piece
of every reply; a call's deltas that pile up unread are now one delta with their text,
and every other event still arrives, in order."""

from __future__ import annotations

import anyio
import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import (
    Event,
    Planner,
    RunCompleted,
    RunEvents,
    StepCompleted,
    Team,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    Worker,
)
from regiment.hierarchy.run._channel import _LAG, RunChannel
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, tool_call_response
from regiment.tools import tool

from .brains import plan_json, tool_results

pytestmark = pytest.mark.anyio

ANSWER = "The total is 42 euros, tax included, and nothing is left to pay. " * 40
REPLY = "The two lines add up to 42. " * 20


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _brain(request: ModelRequest) -> ModelResponse | str:
    match request.role:
        case "planner":
            return plan_json({"description": "add up the invoice", "worker": "clerk"})
        case "worker":
            if not tool_results(request):
                return tool_call_response("add", {"a": 40, "b": 2})
            return REPLY
        case "synthesizer":
            return ANSWER
        case _:
            raise AssertionError(request.role)


def _team() -> Team:
    model = ScriptedModel(_brain, delta_size=1)  # a delta per character
    clerk = Worker(name="clerk", description="adds numbers", model=model, tools=[add])
    return Team(name="books", planner=Planner(model=model), workers=[clerk])


def _text(events: list[Event], role: str) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.role == role).strip()


async def test_a_second_task_reading_the_same_events_is_refused() -> None:
    seen: list[Event] = []
    refused: list[ConfigError] = []

    async def second(events: RunEvents) -> None:
        try:
            async for event in events:
                seen.append(event)
        except ConfigError as exc:  # a slip in the code (a RuntimeError too)
            refused.append(exc)

    async with _team().start() as running, running.stream("add up") as events:
        first: list[Event] = [await events.__anext__()]
        async with anyio.create_task_group() as tg:
            tg.start_soon(second, events)
            first.extend([event async for event in events])
    assert seen == []
    (error,) = refused
    assert isinstance(error, RuntimeError)
    assert "read by one task" in str(error)
    assert "hand each event on" in str(error)
    # the first reader, meanwhile, got every event
    assert isinstance(first[-1], RunCompleted)
    assert _text(first, "synthesizer") == ANSWER.strip()


async def test_a_task_may_read_on_once_the_one_before_it_ended() -> None:
    async with _team().start() as running, running.stream("add up") as events:

        async def read_three(into: list[Event]) -> None:
            for _ in range(3):
                into.append(await events.__anext__())

        taken: list[Event] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_three, taken)
        rest = [event async for event in events]  # this task, after that one ended
    assert len(taken) == 3
    assert isinstance(rest[-1], RunCompleted)
    assert _text(taken + rest, "synthesizer") == ANSWER.strip()


async def test_an_unread_stream_holds_a_calls_text_not_each_delta() -> None:
    """The reader takes nothing until the run has ended: what waits is one delta per
    call's stretch of text (it was one per character), and nothing else is lost."""
    async with _team().start() as running, running.stream("add up") as events:
        with anyio.fail_after(30):
            while events.ending is None:  # noqa: ASYNC110 - no event says the run ended
                await anyio.sleep(0.01)
        waiting = events._receive.statistics().current_buffer_used
        received = [event async for event in events]
    assert len(received) == waiting
    deltas = [e for e in received if isinstance(e, TextDelta)]
    characters = len(ANSWER) + len(REPLY)  # a delta each, before
    # each one on its own until _LAG events wait, then one a call (and step event)
    assert len(deltas) <= _LAG + 4 < characters
    assert _text(received, "synthesizer") == ANSWER.strip()
    assert _text(received, "worker") == REPLY.strip()
    # every other event arrives, in order: the tool call before the step's end
    kinds = [type(e) for e in received if not isinstance(e, TextDelta)]
    assert kinds.index(ToolCallStarted) < kinds.index(ToolCallFinished)
    assert kinds.index(ToolCallFinished) < kinds.index(StepCompleted) < kinds.index(RunCompleted)
    assert isinstance(received[-1], RunCompleted)
    assert received[-1].result.answer == ANSWER.strip()


def _delta(text: str, step_id: str | None = None) -> TextDelta:
    if step_id is None:
        return TextDelta(run_id="run-1", role="synthesizer", text=text)
    return TextDelta(run_id="run-1", role="worker", text=text, worker="clerk", step_id=step_id)


async def test_only_deltas_that_wait_are_joined_and_none_past_another_event() -> None:
    """Deltas come one by one while fewer than _LAG events wait; beyond, those that
    wait are joined per call, never across another event, and none is lost."""
    channel, receive = RunChannel.open(streaming=True)
    events = RunEvents(receive, channel=channel)
    with receive, channel.send:
        channel.live(_delta("a"))
        channel.live(_delta("b"))  # few wait: not joined
        assert [await events.__anext__(), await events.__anext__()] == [_delta("a"), _delta("b")]
        filler = [_delta(str(index % 10), "s0") for index in range(_LAG)]
        for event in filler:
            channel.live(event)  # one by one until _LAG wait
        channel.live(_delta("z", "s0"))  # from here on, joined
        channel.live(_delta("c"))
        channel.live(_delta("1", "s1"))
        channel.live(_delta("2", "s1"))
        channel.live(_delta("x", "s0"))
        assert channel.unread
        for _ in filler:
            await events.__anext__()
        assert await events.__anext__() == _delta("zx", "s0")
        assert await events.__anext__() == _delta("c")  # taken: the next is not joined to it
        started = ToolCallStarted(
            run_id="run-1", worker="clerk", step_id="s1", tool="add", call_id="c1", arguments={}
        )
        for _ in range(_LAG):
            channel.live(started)  # _LAG wait again
        for text in ("c", "d", "e", "f"):
            channel.live(_delta(text))
        channel.live(started)
        channel.live(_delta("g"))  # after another event: not joined across it
        channel.live(_delta("2", "s1"))
        for index in range(3 * 64 + 5):  # a long wait: still one delta
            channel.live(_delta(str(index % 10)))
        channel.send.close()
        taken = [event async for event in events]
    tail = "".join(str(index % 10) for index in range(3 * 64 + 5))
    assert taken == [
        _delta("12", "s1"),
        *[started] * _LAG,
        _delta("cdef"),  # not joined to "c" before it: that was read
        started,
        _delta("g" + tail),  # not joined across the event before it
        _delta("2", "s1"),
    ]
    assert channel.joined == {}
    assert channel.unread == {}


async def test_reading_after_the_block_says_why_there_is_nothing() -> None:
    """It raised anyio's ``ClosedResourceError`` with no message."""
    async with _team().start() as running:
        async with running.stream("add up") as events:
            pass
        with pytest.raises(ConfigError, match=r"stream\(\) block was left") as caught:
            await events.__anext__()
    assert "events.ending" in str(caught.value)
    assert events.ending is not None
