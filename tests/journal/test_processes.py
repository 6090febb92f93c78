"""Real processes sharing one journal: SQLite file and PostgreSQL database alike."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from regiment.journal import EventRecorded, Journal, open_journal

from .records import Clock, created, new_id

CONTENDER = Path(__file__).with_name("contender.py")


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "shared.db")
    return str(request.getfixturevalue("postgres_url"))


class Contender:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def expect(self, *choices: str) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        assert line.split(" ")[0] in choices, f"expected {choices}, the contender said {line!r}"
        return line

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()


@contextmanager
def contenders(location: str, role: str, run_id: str, count: int) -> Iterator[list[Contender]]:
    started = [
        Contender(
            subprocess.Popen(
                [
                    sys.executable,
                    str(CONTENDER),
                    location,
                    role,
                    run_id,
                    ("asyncio", "trio")[i % 2],
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        for i in range(count)
    ]
    try:
        yield started
        for contender in started:
            assert contender.process.wait(timeout=30) == 0
    finally:
        for contender in started:
            if contender.process.poll() is None:
                contender.process.kill()
                contender.process.wait()
            for pipe in (contender.process.stdin, contender.process.stdout):
                if pipe is not None:
                    pipe.close()


async def _stalled_run(location: str, run_id: str) -> None:
    journal = await open_journal(location)
    lease = await journal.create_run(created(run_id), owner="parent", ttl=60)
    await journal.release(lease)
    await journal.close()


async def _records(location: str, run_id: str) -> list[EventRecorded]:
    journal = await open_journal(location)
    try:
        entries = await journal.read(run_id)
    finally:
        await journal.close()
    assert [entry.seq for entry in entries] == list(range(1, len(entries) + 1))
    return [e.record for e in entries[1:] if isinstance(e.record, EventRecorded)]


def test_two_processes_contend_for_one_lease_and_exactly_one_wins(shared: str) -> None:
    run_id = new_id()
    anyio.run(_stalled_run, shared, run_id)
    with contenders(shared, "acquire", run_id, 2) as pair:
        for contender in pair:
            contender.expect("ready")
        for contender in pair:
            contender.send("go")
        said = [contender.expect("won", "held") for contender in pair]
        assert sorted(said) == ["held", "won 2"]
        winner = pair[said.index("won 2")]
        winner.send("release")
        for contender in pair:
            contender.expect("done")
    events = anyio.run(_records, shared, run_id)
    assert [e.event["index"] for e in events] == list(range(20))
    assert {e.event["owner"] for e in events} == {f"pid:{winner.process.pid}"}


async def _take_over(location: str, run_id: str) -> int:
    later = Clock(now=time.time() + 120)  # to this process, the zombie's lease has expired
    journal: Journal = await open_journal(location, clock=later)
    try:
        lease = await journal.acquire(run_id, owner="heir", ttl=60)
    finally:
        await journal.close()
    return lease.token


def test_a_zombie_processes_late_write_is_rejected(shared: str) -> None:
    run_id = new_id()
    with contenders(shared, "zombie", run_id, 1) as (zombie,):
        zombie.expect("ready")
        assert anyio.run(_take_over, shared, run_id) == 2
        zombie.send("go")
        zombie.expect("lost")
        zombie.expect("done")
    assert anyio.run(_records, shared, run_id) == []


def test_two_processes_writing_one_journal_stay_consistent(shared: str) -> None:
    prefix = new_id()
    with contenders(shared, "writer", prefix, 2) as pair:
        for contender in pair:
            contender.expect("ready")
        for contender in pair:
            contender.send("go")
        for contender in pair:
            contender.expect("done")
    for contender in pair:
        for number in range(5):
            run_id = f"{prefix}-{contender.process.pid}-{number}"
            events = anyio.run(_records, shared, run_id)
            assert [e.event["index"] for e in events] == list(range(100))
            assert {e.event["owner"] for e in events} == {f"pid:{contender.process.pid}"}
