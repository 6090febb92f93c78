"""Spans a killed process left open under its run's root are ended by the resume, with
their journaled ids, as interrupted: the spans that ended inside them (exported before the
kill) are no orphans, and no span id is sent twice.

A step's ``invoke_agent`` span id is chosen as the step is dispatched and journaled with
it (``StepDispatched.span``); a nested run's root span's ids with its creation; a tool
call's ``execute_tool`` span id with its intent (``ToolCallStarted.span``). Real
processes (tests/telemetry/_crash_child.py), killed with SIGKILL once the journal holds
what they did (within ``COMMIT_WAIT``) and the exporter has sent every span they ended;
a real SQLite journal; the real OTLP exporter to a loopback receiver.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import msgspec
import pytest

from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import (
    Entry,
    RunCreated,
    StepDispatched,
    ToolCallStarted,
    nested_run_id,
    open_journal,
)

from ..journal.killed_child import killed_child
from .otlp_receiver import OtlpReceiver, ReceivedSpan

# Every run is in child processes (_crash_child.py, on asyncio): this test's backend only
# reads the journal and the receiver's spans (tests/journal reads on both backends);
# on trio it ran the same children again, for nothing more.
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

CHILD = Path(__file__).with_name("_crash_child.py")
ROOT = "invoke_agent crashers"
SHIFT = LEASE_TTL + 1  # the journal's clock ahead of the killed process's lease, per resume
ERROR = 2  # the OTLP status code


def _ns(when: datetime) -> int:
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


async def _entries(where: str, run_id: str) -> tuple[Entry, ...]:
    journal = await open_journal(where)
    try:
        return await journal.read(run_id)
    finally:
        await journal.close()


async def _killed_then_finished(
    tmp_path: Path, stops: list[str], *flags: str
) -> tuple[str, str, list[tuple[ReceivedSpan, ...]], tuple[ReceivedSpan, ...]]:
    """Run the child killed at each of ``stops`` (the first starts the run, each next one
    resumes it), then a resume that finishes it: the journal, the run's id, what each
    killed process exported, and every span the receiver got."""
    where, log = str(tmp_path / "runs.db"), tmp_path / "child.log"
    run_id, sent = "", []
    with OtlpReceiver() as receiver:
        for n, stop in enumerate(stops):
            again = [run_id, str(n * SHIFT)] if run_id else []
            args = [where, receiver.endpoint, stop, *again, *flags]
            before = len(receiver.spans())
            async with killed_child(CHILD, args, log, "ready", 60) as run_id:
                pass
            sent.append(receiver.spans()[before:])
        finish = [where, receiver.endpoint, "none", run_id, str(len(stops) * SHIFT), *flags]
        with anyio.fail_after(120):
            done = await anyio.run_process([sys.executable, str(CHILD), *finish], check=False)
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().splitlines()[-1] == "finished completed"
        return where, run_id, sent, receiver.spans()


def _one_whole_trace(spans: tuple[ReceivedSpan, ...]) -> ReceivedSpan:
    """One trace, one root, every parent present, no span id twice: the root."""
    assert len({s.trace_id for s in spans}) == 1
    ids = [s.span_id for s in spans]
    assert sorted(ids) == sorted(set(ids))  # no span was sent twice
    orphans = [(s.name, s.parent_span_id) for s in spans if s.parent_span_id not in {None, *ids}]
    assert orphans == []
    (root,) = [s for s in spans if s.parent_span_id is None]
    return root


def _dispatches(entries: tuple[Entry, ...], step: str) -> list[tuple[str | None, datetime]]:
    return [
        (e.record.span, e.recorded_at)
        for e in entries
        if isinstance(e.record, StepDispatched) and e.record.step_id == step
    ]


def _by_id(spans: tuple[ReceivedSpan, ...], span_id: str | None) -> ReceivedSpan:
    (found,) = [s for s in spans if s.span_id == span_id]
    return found


def _interrupted(span: ReceivedSpan) -> None:
    """``span`` reads as ended by a resume: its process died with it open."""
    assert span.status_code == ERROR
    assert span.attributes["error.type"] == "interrupted"
    assert span.attributes["regiment.interrupted"] is True
    assert [name for name, _ in span.events] == ["regiment.interrupted"]
    assert "process died" in span.status_message


async def test_a_step_killed_mid_step_is_ended_as_interrupted_before_it_runs_again(
    tmp_path: Path,
) -> None:
    # Killed at s1's second model call: its first chat span and its tool call's span had
    # ended and were exported, under a step span that never was.
    where, run_id, (killed,), spans = await _killed_then_finished(tmp_path, ["s1+"])
    entries = await _entries(where, run_id)
    (lost, sent_at), (again, _) = _dispatches(entries, "s1")  # sent, then sent again
    assert lost is not None
    assert again is not None
    assert lost != again
    inside = {s.name for s in killed if s.parent_span_id == lost}
    assert inside == {"chat scripted", "execute_tool look_up"}
    assert lost not in {s.span_id for s in killed}

    root = _one_whole_trace(spans)
    assert root.name == ROOT
    ended = _by_id(spans, lost)
    assert (ended.name, ended.parent_span_id) == ("invoke_agent clerk", root.span_id)
    _interrupted(ended)
    assert ended.attributes["regiment.step.id"] == "s1"
    assert ended.attributes["regiment.run.id"] == run_id
    assert ended.start == _ns(sent_at)  # when its dispatch was journaled
    rerun = _by_id(spans, again)  # the step run again: a span of its own, after it
    assert rerun.parent_span_id == root.span_id
    assert rerun.status_code != ERROR
    assert "regiment.interrupted" not in rerun.attributes
    assert ended.end <= rerun.start
    # Only the step the kill cut short reads as interrupted.
    assert [s.span_id for s in spans if "regiment.interrupted" in s.attributes] == [lost]


async def test_a_run_killed_twice_mid_step_ends_each_lost_step_once(tmp_path: Path) -> None:
    where, run_id, (first, second), spans = await _killed_then_finished(tmp_path, ["s1+", "s2+"])
    entries = await _entries(where, run_id)
    (s1_lost, _), (s1_again, _) = _dispatches(entries, "s1")
    (s2_lost, _), (s2_again, _) = _dispatches(entries, "s2")
    assert {s.parent_span_id for s in first if s.name == "execute_tool look_up"} == {s1_lost}
    assert {s.parent_span_id for s in second if s.name == "execute_tool look_up"} >= {s2_lost}
    # The first resume ended s1's lost span; the second, s2's (which the first had sent).
    assert s1_lost in {s.span_id for s in second}

    root = _one_whole_trace(spans)
    lost = [s for s in spans if "regiment.interrupted" in s.attributes]
    assert {s.span_id for s in lost} == {s1_lost, s2_lost}
    assert len(lost) == 2
    for span in lost:
        _interrupted(span)
        assert span.parent_span_id == root.span_id
    done = {s.span_id for s in spans if s.name == "invoke_agent clerk"} - {s1_lost, s2_lost}
    assert done == {s1_again, s2_again}


async def test_a_nested_runs_lost_root_and_step_are_ended_under_the_lost_outer_step(
    tmp_path: Path,
) -> None:
    # Killed inside the nested team's step s1: the outer step (desk's), the nested run's
    # root and its step s1 were open; plan and chat spans under them had been exported.
    where, run_id, (killed,), spans = await _killed_then_finished(tmp_path, ["s1+"], "--nested")
    inner_id = nested_run_id(run_id, 1, "o1")
    outer, inner = await _entries(where, run_id), await _entries(where, inner_id)
    ((o1_lost, _), _) = _dispatches(outer, "o1")
    ((s1_lost, _), _) = _dispatches(inner, "s1")
    created = inner[0].record
    assert isinstance(created, RunCreated)
    assert created.trace is not None
    inner_root = created.trace.split("-")[2]  # journaled as the nested run was created
    assert created.trace_parent is not None
    assert created.trace_parent.split("-")[2] == o1_lost
    exported = {s.parent_span_id for s in killed}
    assert {inner_root, s1_lost} <= exported  # children of spans that never arrived
    assert not {o1_lost, inner_root, s1_lost} & {s.span_id for s in killed}

    root = _one_whole_trace(spans)
    desk, nested_root, step = (_by_id(spans, i) for i in (o1_lost, inner_root, s1_lost))
    for span in (desk, nested_root, step):
        _interrupted(span)
    assert (desk.name, desk.parent_span_id) == ("invoke_agent desk", root.span_id)
    assert (nested_root.name, nested_root.parent_span_id) == ("invoke_agent inner", o1_lost)
    assert nested_root.attributes["regiment.run.id"] == inner_id
    assert nested_root.start == _ns(created.created_at)
    assert (step.name, step.parent_span_id) == ("invoke_agent clerk", inner_root)
    # The resumed nested run's root is a new span, under the outer step as run again.
    (resumed,) = [s for s in spans if s.name == "invoke_agent inner" and s is not nested_root]
    (desk_again,) = [s for s in spans if s.name == "invoke_agent desk" and s is not desk]
    assert resumed.parent_span_id == desk_again.span_id


async def test_what_the_batch_exporter_sent_on_its_own_before_the_kill_has_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No flush at the stop: the child's batch processor exports on its own schedule (made
    # short here); the kill comes once the receiver has what it sent of the open step.
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # milliseconds; the child's
    where, log = str(tmp_path / "runs.db"), tmp_path / "child.log"
    with OtlpReceiver() as receiver:
        args = [where, receiver.endpoint, "s1+", "--no-flush"]
        async with killed_child(CHILD, args, log, "ready", 60) as run_id:
            with anyio.fail_after(30):
                sent = {s.name for s in receiver.spans()}
                while "execute_tool look_up" not in sent:  # another process exports them: no event
                    await anyio.sleep(0.02)
                    sent = {s.name for s in receiver.spans()}
        killed = receiver.spans()
        finish = [where, receiver.endpoint, "none", run_id, str(SHIFT), "--no-flush"]
        with anyio.fail_after(120):
            done = await anyio.run_process([sys.executable, str(CHILD), *finish], check=False)
        assert done.returncode == 0, done.stderr.decode()
        spans = receiver.spans()
    ((lost, _), _) = _dispatches(await _entries(where, run_id), "s1")
    assert {s.parent_span_id for s in killed if s.name == "execute_tool look_up"} == {lost}
    root = _one_whole_trace(spans)
    ended = _by_id(spans, lost)
    _interrupted(ended)
    assert ended.parent_span_id == root.span_id


async def test_a_tool_call_killed_in_its_body_is_ended_as_interrupted_under_its_step(
    tmp_path: Path,
) -> None:
    # Killed inside s1's tool call, once the tool's body had ended a span of its own (as
    # an instrumented client's would be): its parent, the execute_tool span, was open.
    where, run_id, (killed,), spans = await _killed_then_finished(tmp_path, ["s1!"])
    entries = await _entries(where, run_id)
    ((step_lost, _), _) = _dispatches(entries, "s1")
    # The resume ran the call again: its intent again, but for its new span's id.
    intent, again = [
        e for e in entries if isinstance(e.record, ToolCallStarted) and e.record.step_id == "s1"
    ]
    assert isinstance(intent.record, ToolCallStarted)
    assert isinstance(again.record, ToolCallStarted)
    assert again.record.span not in {None, intent.record.span}
    assert msgspec.structs.replace(again.record, span=intent.record.span) == intent.record
    call_lost = intent.record.span
    assert call_lost is not None
    (body,) = [s for s in killed if s.name == "SELECT orders"]
    assert body.parent_span_id == call_lost
    assert not {step_lost, call_lost} & {s.span_id for s in killed}

    root = _one_whole_trace(spans)
    call = _by_id(spans, call_lost)
    _interrupted(call)
    assert (call.name, call.parent_span_id) == ("execute_tool look_up", step_lost)
    assert call.attributes["gen_ai.tool.call.id"] == intent.record.call_id
    assert call.start == _ns(intent.recorded_at)
    step = _by_id(spans, step_lost)
    _interrupted(step)
    assert step.parent_span_id == root.span_id


async def test_a_tool_call_killed_twice_in_its_body_ends_each_lost_call_span_once(
    tmp_path: Path,
) -> None:
    # Killed inside s1's tool call, then killed again inside the same call as the resume
    # ran it again (its intent journaled, no result): each process's execute_tool span is
    # ended once, under that process's step span, and nothing in the trace is an orphan.
    where, run_id, (_, second), spans = await _killed_then_finished(tmp_path, ["s1!", "s1!"])
    entries = await _entries(where, run_id)
    (step_first, _), (step_second, _), (step_done, _) = _dispatches(entries, "s1")
    intents = [
        e for e in entries if isinstance(e.record, ToolCallStarted) and e.record.step_id == "s1"
    ]
    lost = [e.record.span for e in intents if isinstance(e.record, ToolCallStarted)]
    assert len(lost) == 3  # the first run, each resume that ran it again
    assert len(set(lost)) == 3
    assert None not in lost
    keys = {e.record.idempotency_key for e in intents if isinstance(e.record, ToolCallStarted)}
    assert len(keys) == 1  # run again with the same key
    (body,) = [s for s in second if s.name == "SELECT orders"]
    assert body.parent_span_id == lost[1]

    root = _one_whole_trace(spans)
    for call_lost, step_lost in ((lost[0], step_first), (lost[1], step_second)):
        call = _by_id(spans, call_lost)
        _interrupted(call)
        assert (call.name, call.parent_span_id) == ("execute_tool look_up", step_lost)
        _interrupted(_by_id(spans, step_lost))
    done = _by_id(spans, lost[2])
    assert done.parent_span_id == step_done
    assert "regiment.interrupted" not in done.attributes
    interrupted = {s.span_id for s in spans if "regiment.interrupted" in s.attributes}
    assert interrupted == {lost[0], lost[1], step_first, step_second}
    assert root.name == ROOT
