"""What ``stream()`` yields (``RunEvents``): the events in order, those already
waiting taken without a loop turn each, a yield every ``_STREAK`` of them, a
cancelled reader stopped at its next event even when more are waiting, and the
run's ending, read or not, once the block is left."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from regiment.errors import ConfigError, JournalError
from regiment.hierarchy import Planner, RunEvents, Team, Worker
from regiment.hierarchy.events import Event, RunCompleted, StepCompleted, TextDelta
from regiment.hierarchy.run._channel import _STREAK
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart

from .brains import Brain, Hang, plan_json

pytestmark = pytest.mark.anyio


@contextmanager
def _waiting(count: int, *, closed: bool = True) -> Iterator[RunEvents]:
    """``count`` events already sent (and the sending end closed, if ``closed``)."""
    send, receive = anyio.create_memory_object_stream[Event](math.inf)
    with send, receive:
        for index in range(count):
            send.send_nowait(TextDelta(run_id="run-1", role="worker", text=str(index)))
        if closed:
            send.close()
        yield RunEvents(receive)


def _text(event: Event) -> str:
    assert isinstance(event, TextDelta)
    return event.text


async def test_every_event_arrives_in_order_and_the_stream_ends() -> None:
    with _waiting(3 * _STREAK + 5) as events:
        assert [_text(e) async for e in events] == [str(i) for i in range(3 * _STREAK + 5)]
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()


async def test_waiting_events_are_taken_without_a_loop_turn_each_but_not_all_at_once() -> None:
    count = 8 * _STREAK
    turns = 0
    seen_at: list[int] = []  # the other task's turns when each event was taken

    async def other_task() -> None:
        nonlocal turns
        while True:
            turns += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(other_task)
        await anyio.lowlevel.checkpoint()
        with _waiting(count) as events:
            async for _ in events:
                seen_at.append(turns)
        tg.cancel_scope.cancel()
    yielded = len(set(seen_at)) - 1  # times the other task ran while the reader read
    assert yielded < count // 2  # a loop turn per event would give ~count
    # yet it ran now and then (every _STREAK events; trio's batches may merge two)
    assert yielded >= 2


async def test_a_cancelled_reader_stops_at_its_next_event_though_more_are_waiting() -> None:
    with _waiting(10, closed=False) as events:
        assert _text(await events.__anext__()) == "0"
        with anyio.CancelScope() as scope:
            scope.cancel()
            await events.__anext__()
            pytest.fail("a cancelled reader took an event")
        assert scope.cancelled_caught
        assert _text(await events.__anext__()) == "1"  # nothing was lost to the cancel


async def test_a_reader_waits_for_an_event_not_yet_sent() -> None:
    send, receive = anyio.create_memory_object_stream[Event](math.inf)
    events = RunEvents(receive)
    with send, receive:
        async with anyio.create_task_group() as tg:

            async def later() -> None:
                await anyio.sleep(0.01)
                send.send_nowait(TextDelta(run_id="run-1", role="worker", text="late"))
                send.close()

            tg.start_soon(later)
            assert [_text(e) async for e in events] == ["late"]


async def test_a_stream_left_early_still_has_the_runs_ending_after_the_block() -> None:
    hang = Hang()
    plan = plan_json({"id": "s1", "description": "quick"}, {"id": "s2", "description": "hang"})

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "hang":
            await hang(description, results, request)
        return f"did: {description}"

    model = ScriptedModel(Brain([plan], work=work))
    worker = Worker(name="w", description="Works.", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    async with team.start() as running, running.stream("go") as events:
        async for event in events:
            if isinstance(event, StepCompleted):
                await hang.started.wait()
                break  # the reader leaves with s2 in flight: the run is cancelled
    # Leaving the block waited for the run to wind down: its end, unread, is here.
    ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    assert [p.version for p in ending.result.plans] == [1]
    assert sorted((r.step_id, r.status) for r in ending.result.steps) == [
        ("s1", "done"),
        ("s2", "cancelled"),
    ]
    assert ending.result.committed == ("s1",)
    assert hang.cancelled == ["hang"]


async def test_a_stream_entered_twice_says_to_call_stream_again(tmp_path: Path) -> None:
    # It was Python's own "'_AsyncGeneratorContextManager' object has no attribute 'args'".
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 2))
    worker = Worker(name="w", description="Works.", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    async with team.start(journal=tmp_path / "runs.db") as running:
        stream = running.stream("go")
        async with stream as events:
            first = [event async for event in events]
        with pytest.raises(ConfigError) as entered:  # a slip in the code: a RuntimeError too
            async with stream:
                pass
        assert isinstance(entered.value, RuntimeError)
        assert str(entered.value) == (
            "this stream was entered already: a stream is one run, read once; call "
            "running.stream(goal) again (and enter what it returns) for another run"
        )
        ending = first[-1]
        assert isinstance(ending, RunCompleted)
        assert ending.result.status == "completed"
        assert running.active_runs == 0  # nothing was started by the second entry
        resumed = running.resume_stream(ending.result.run_id)
        with pytest.raises(JournalError):  # finished: refused, on entering
            async with resumed:
                pass
        with pytest.raises(ConfigError, match=r"call running.resume_stream\(run_id\) again"):
            async with resumed:
                pass
        async with running.stream("go") as again:  # a new one: another run
            assert [type(e) for e in [event async for event in again]][-1] is RunCompleted
