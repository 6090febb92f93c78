"""Kill -9 a process in the middle of a journaled run, resume it here, and nothing repeats.

A child process runs the durable test team (``durable_team``) on a real SQLite
file or PostgreSQL server and stops at a named point: inside a model call,
inside a tool body (after its side effect), between steps, during a replan. It
says so on its stdout (the handshake: no sleeps), the test ``SIGKILL``s it, and
resumes the run in this process, on asyncio and trio. The killed owner's lease
has not expired yet, so the resuming journal's clock runs a lease's length
ahead (the journal's clock is its own seam; see ``Journal``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from regiment import ScriptedModel
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import open_journal

from .durable_team import GOAL, KILL_POINTS, Ledger, check_resumed, make_team

pytestmark = pytest.mark.anyio

CHILD = Path(__file__).with_name("durable_team.py")


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("postgres_url"))


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _text(path: Path) -> str:
    return path.read_text()


async def _baseline(folder: Path) -> str:
    _folder(folder)
    async with make_team().start() as running:
        result = await running.run(GOAL, deps=Ledger(folder))
    return result.answer


async def _line(out: BufferedByteReceiveStream, process: Process, log: Path) -> str:
    try:
        return (await out.receive_until(b"\n", 10_000)).decode()
    except (anyio.IncompleteRead, anyio.EndOfStream):
        await process.wait()
        raise AssertionError(f"the child ended early: {_text(log)}") from None


def _errors_to(log: Path) -> int:
    return os.open(log, os.O_WRONLY | os.O_CREAT, 0o644)


@asynccontextmanager
async def stopped_child(
    where: str, folder: Path, stop_at: str, *options: str
) -> AsyncIterator[tuple[str, Process]]:
    """The durable team's child process, stopped at ``stop_at`` with its run's lease held:
    its run id and the process, which is SIGKILLed on the way out if it still runs
    (``options``: more arguments, ``nested`` for the team nested in another)."""
    log = _folder(folder) / "child.log"
    errors = _errors_to(log)
    try:
        process = await anyio.open_process(
            [sys.executable, str(CHILD), where, str(folder), stop_at, *options],
            stdout=subprocess.PIPE,
            stderr=errors,
        )
    finally:
        os.close(errors)
    try:
        assert process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        first = await _line(out, process, log)
        assert first.startswith("run "), first
        ready = await _line(out, process, log)
        assert ready == f"ready {stop_at}", ready
        yield first.split()[1], process
    finally:
        # Never kill twice: a second kill() of a child that has just died lets its
        # poll reap it before asyncio's watcher thread does, which then reports 255
        # ("Unknown child process pid"), a known asyncio race on Python 3.11.
        if process.returncode is None:
            process.kill()  # SIGKILL: no cleanup, no journal close
        await process.wait()
        await process.aclose()


async def _run_and_kill(where: str, folder: Path, stop_at: str) -> str:
    async with stopped_child(where, folder, stop_at) as (run_id, process):
        process.kill()
        await process.wait()
    assert process.returncode == -9
    return run_id


@pytest.mark.parametrize("stop_at", KILL_POINTS)
async def test_a_killed_run_resumes_without_repeating_side_effects(
    where: str, stop_at: str, tmp_path: Path
) -> None:
    answer = await _baseline(tmp_path / "baseline")
    folder = tmp_path / "crashed"
    run_id = await _run_and_kill(where, folder, stop_at)
    ledger = Ledger(folder)
    before = len(ledger.lines(ledger.bodies))

    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        assert (await journal.get_run(run_id)).status == "stalled"
        team = make_team()
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id, deps=ledger)
        info = await journal.get_run(run_id)
    finally:
        await journal.close()
    assert info.status == "completed"
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    roles = [r.role for r in model.requests]
    if stop_at != "model:s1:1":  # the plan was journaled (durable with s1's tool call intent)
        assert "planner" not in roles, roles  # replayed, not re-sent
        assert roles.count("worker") < 8  # the uninterrupted run makes 8 worker calls
    assert result.run_id == run_id
    assert len(ledger.lines(ledger.bodies)) > before or stop_at == "model:s4:2"
    check_resumed(
        answer=result.answer,
        baseline_answer=answer,
        ledger=ledger,
        baseline=Ledger(tmp_path / "baseline"),
        run_id=run_id,
        stop_at=stop_at,
    )
