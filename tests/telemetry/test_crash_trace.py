"""A run killed (SIGKILL) and resumed reads as one complete trace: its root span, which the
killed process never ended (so never exported), is ended by the resume that finishes the
run, with the ids, parent and start it had, so every exported span's parent arrives.

Real processes (tests/telemetry/_crash_child.py), a real SQLite journal, the real OTLP
exporter to a loopback receiver that decodes what it is sent.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import Record, RunCreated, RunResumed, open_journal

from ..journal.killed_child import killed_child
from .otlp_receiver import OtlpReceiver, ReceivedSpan

# Every run is in child processes (_crash_child.py, on asyncio): this test's backend only
# reads the journal and the receiver's spans (tests/journal reads on both backends);
# on trio it ran the same children again, for nothing more.
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

CHILD = Path(__file__).with_name("_crash_child.py")
ROOT = "invoke_agent crashers"
CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"  # a remote caller's span


def _ns(when: datetime) -> int:
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


async def _child(*args: str) -> str:
    """Run the child to its end (no stop point); what it printed."""
    with anyio.fail_after(120):
        done = await anyio.run_process([sys.executable, str(CHILD), *args], check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def _finish(where: str, endpoint: str, run_id: str, shift: float) -> str:
    return await _child(where, endpoint, "none", run_id, str(shift))


async def _records(where: str, run_id: str) -> list[Record]:
    journal = await open_journal(where)
    try:
        return [entry.record for entry in await journal.read(run_id)]
    finally:
        await journal.close()


def _parents_present(spans: tuple[ReceivedSpan, ...], outside: str | None = None) -> None:
    """Every span's parent is among ``spans`` (or is ``outside``: a caller's, sent by it)."""
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans)  # no span was exported twice
    known = ids | {outside}
    orphans = [s.name for s in spans if s.parent_span_id and s.parent_span_id not in known]
    assert orphans == []


async def test_a_run_killed_twice_and_resumed_is_one_trace_with_one_root(tmp_path: Path) -> None:
    where, log = str(tmp_path / "runs.db"), tmp_path / "child.log"
    ttl = LEASE_TTL + 1
    with OtlpReceiver() as receiver:
        args = [where, receiver.endpoint, "s1"]
        async with killed_child(CHILD, args, log, "ready", 60) as run_id:
            pass  # killed at s1's first model call: the plan's spans were exported
        first = receiver.spans()
        args = [where, receiver.endpoint, "s2", run_id, str(ttl)]
        async with killed_child(CHILD, args, log, "ready", 60) as again:
            assert again == run_id  # killed again, at s2's: s1's spans were exported
        second = receiver.spans()[len(first) :]
        out = await _finish(where, receiver.endpoint, run_id, 2 * ttl)
        spans = receiver.spans()
    assert out.splitlines()[-1] == "finished completed"
    records = await _records(where, run_id)
    created, resumes = records[0], [r for r in records if isinstance(r, RunResumed)]
    assert isinstance(created, RunCreated)
    assert created.trace is not None
    assert created.trace_parent is None  # the run was the root of its trace
    _, trace_id, span_id, _ = created.trace.split("-")

    # The killed processes exported the spans they ended, under a root they never sent.
    assert {s.name for s in first} >= {"plan planner", "chat scripted"}
    assert {s.name for s in second} >= {"invoke_agent clerk", "execute_tool look_up"}
    assert not [s for s in (*first, *second) if s.name == ROOT]
    assert {s.parent_span_id for s in first if s.name == "plan planner"} == {span_id}

    # One trace, one root: the first process's root span, ended by the last resume.
    assert {s.trace_id for s in spans} == {trace_id}
    (root,) = [s for s in spans if s.parent_span_id is None]
    assert (root.name, root.span_id) == (ROOT, span_id)
    _parents_present(spans)
    assert root.start == _ns(created.created_at)  # when the run began, in the first process
    assert root.end >= max(s.end for s in spans)
    assert root.attributes["regiment.run.status"] == "completed"
    assert root.attributes["regiment.run.resume"] == 2
    assert not root.links  # it is the first root: nothing to link to
    resumed = [(n, a) for n, a in root.events if n == "regiment.run.resumed"]
    assert resumed == [("regiment.run.resumed", {"regiment.run.resume": n}) for n in (1, 2)]
    pairs = zip(root.events, root.event_times, strict=True)
    times = [at for (name, _), at in pairs if name == "regiment.run.resumed"]
    assert times[0] == _ns(resumes[0].resumed_at)  # when the first resume took the run over
    # The last: as it opened the span again, just before it journaled that it resumed.
    assert times[0] < times[1] <= _ns(resumes[1].resumed_at)
    # Each resume journaled that it went on with the same span.
    assert [(r.number, r.trace, r.trace_parent) for r in resumes] == [
        (1, created.trace, None),
        (2, created.trace, None),
    ]


async def test_a_killed_run_under_a_caller_keeps_the_callers_span_as_its_roots_parent(
    tmp_path: Path,
) -> None:
    where, log = str(tmp_path / "runs.db"), tmp_path / "child.log"
    with OtlpReceiver() as receiver:
        args = [where, receiver.endpoint, "s2", "--parent", CALLER]
        async with killed_child(CHILD, args, log, "ready", 60) as run_id:
            pass
        await _finish(where, receiver.endpoint, run_id, LEASE_TTL + 1)
        spans = receiver.spans()
    created = (await _records(where, run_id))[0]
    assert isinstance(created, RunCreated)
    assert created.trace_parent == CALLER  # journaled with the root span
    _, caller_trace, caller_span, _ = CALLER.split("-")
    (root,) = [s for s in spans if s.name == ROOT]
    assert (root.trace_id, root.parent_span_id) == (caller_trace, caller_span)
    assert created.trace is not None
    assert root.span_id == created.trace.split("-")[2]
    # Under the caller's span (sent by the caller, not here), every other parent arrived.
    _parents_present(spans, outside=caller_span)
    assert {s.trace_id for s in spans} == {caller_trace}


async def test_a_run_nobody_killed_has_the_trace_it_always_had(tmp_path: Path) -> None:
    where = str(tmp_path / "runs.db")
    with OtlpReceiver() as receiver:
        out = await _child(where, receiver.endpoint, "none")
        spans = receiver.spans()
    assert out.splitlines()[-1] == "finished completed"
    (root,) = [s for s in spans if s.parent_span_id is None]
    assert root.name == ROOT
    _parents_present(spans)
    assert "regiment.run.resume" not in root.attributes
    assert not [n for n, _ in root.events if n == "regiment.run.resumed"]
    assert root.start <= min(s.start for s in spans)
    run_id = root.attributes["regiment.run.id"]
    assert isinstance(run_id, str)
    created = (await _records(where, run_id))[0]
    assert isinstance(created, RunCreated)
    assert created.trace is not None
    assert created.trace.startswith(f"00-{root.trace_id}-{root.span_id}-")
    assert created.trace_parent is None
