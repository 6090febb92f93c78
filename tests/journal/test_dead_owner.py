"""A lease whose owner is a process of this machine that provably died counts as lapsed,
and the run lists as ``stalled`` at once (on every backend), as a resume would treat it.

Real processes on a real SQLite file or PostgreSQL server, with the journal's real
clock: a run whose owner still runs is refused (``LeaseHeld``); once that owner is
SIGKILLed, a resume takes the run over at once. An owner whose pid now belongs to a
process that started at another time (a reused pid) is gone too; an owner written
before owners carried their start (``host:pid``) is still read, and its lease is waited
out as before.
"""

from __future__ import annotations

import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from regiment.errors import LeaseHeld
from regiment.journal import Journal, RunCreated, RunStatus, open_journal, process_owner

from .durable_team import Ledger, make_team
from .test_crash_resume import stopped_child, where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture, shared with the crash tests

_OWNER = "from regiment.journal import process_owner; print(process_owner(), flush=True); input()"


async def test_a_live_owner_is_refused_and_a_killed_one_resumes_at_once(
    where: str, tmp_path: Path
) -> None:
    folder = tmp_path / "crashed"
    journal = await open_journal(where)
    try:
        async with make_team().start(journal=journal) as running:
            async with stopped_child(where, folder, "tool:s1") as (run_id, process):
                alive = f"owned by process {process.pid} on this machine .* which still runs"
                with pytest.raises(LeaseHeld, match=alive):
                    await running.resume(run_id, deps=Ledger(folder))
                process.kill()
                await process.wait()
            result = await running.resume(run_id, deps=Ledger(folder))
        assert (await journal.get_run(run_id)).status == "completed"
    finally:
        await journal.close()
    assert result.run_id == run_id


def _created(run_id: str) -> RunCreated:
    return RunCreated(
        run_id=run_id, team="t", config_hash="h", goal="g", created_at=datetime.now(UTC)
    )


async def test_a_reused_pid_is_told_from_its_owner_and_old_owners_wait(tmp_path: Path) -> None:
    child = await anyio.open_process([sys.executable, "-c", _OWNER])
    async with child:
        assert child.stdout is not None
        assert child.stdin is not None
        line = await BufferedByteReceiveStream(child.stdout).receive_until(b"\n", 1000)
        owner = line.decode()
        host, pid, stamp = owner.split(":")
        machine, start = stamp.rsplit(".", 1)
        reused = f"{host}:{pid}:{machine}.{int(start) + 1}"  # that pid, started at another time
        journal = await open_journal(str(tmp_path / "runs.db"))
        try:
            for run_id, named in (("live", owner), ("reused", reused), ("old", f"{host}:{pid}")):
                await journal.create_run(_created(run_id), owner=named, ttl=600)
            with pytest.raises(LeaseHeld, match=owner):
                await journal.acquire("live", owner="me", ttl=60)
            assert (await journal.acquire("reused", owner="me", ttl=60)).token == 2
            await child.stdin.send(b"\n")
            assert await child.wait() == 0
            with pytest.raises(LeaseHeld, match="whose lease is alive"):
                await journal.acquire("old", owner="me", ttl=60)  # no start: not provable
            assert (await journal.acquire("live", owner="me", ttl=60)).token == 2
            await journal.create_run(_created("here"), owner=process_owner(), ttl=600)
            with pytest.raises(LeaseHeld, match="'here' is running in this process already"):
                await journal.acquire("here", owner="me", ttl=60)
            await journal.create_run(_created("elsewhere"), owner=f"x{owner}", ttl=600)
            with pytest.raises(LeaseHeld):
                await journal.acquire("elsewhere", owner="me", ttl=60)  # another host
        finally:
            await journal.close()
    assert host == socket.gethostname()


async def _owner_of(child: Process) -> str:
    assert child.stdout is not None
    return (await BufferedByteReceiveStream(child.stdout).receive_until(b"\n", 1000)).decode()


async def _listed(
    journal: Journal, status: RunStatus | None = None, limit: int | None = None
) -> list[tuple[str, str]]:
    return [(r.run_id, r.status) for r in await journal.list_runs(status=status, limit=limit)]


async def test_a_run_whose_owner_here_is_gone_lists_as_stalled_at_once(journal: Journal) -> None:
    child = await anyio.open_process([sys.executable, "-c", _OWNER])
    async with child:
        owner = await _owner_of(child)
        started = datetime.now(UTC)
        owners = {"r1-gone": owner, "r2-here": process_owner(), "r3-here": process_owner()}
        owners["r4-elsewhere"] = f"x{owner}"  # another host: its lease is waited out
        for number, (run_id, named) in enumerate(owners.items()):
            at = started + timedelta(seconds=number)
            run = RunCreated(run_id=run_id, team="t", config_hash="h", goal="g", created_at=at)
            await journal.create_run(run, owner=named, ttl=600)
        assert (await journal.get_run("r1-gone")).status == "running"  # its owner still runs
        assert child.stdin is not None
        await child.stdin.send(b"\n")
        assert await child.wait() == 0
    # What a resume would do: take r1-gone over at once, so it lists as stalled, by
    # every lookup, though its lease has 600 s to go; the others' owners may still run.
    running = [("r4-elsewhere", "running"), ("r3-here", "running"), ("r2-here", "running")]
    assert await _listed(journal) == [*running, ("r1-gone", "stalled")]
    assert (await journal.get_run("r1-gone")).status == "stalled"
    assert await _listed(journal, "stalled") == [("r1-gone", "stalled")]
    # The limit counts the runs of that status, not the ones with a live lease.
    assert await _listed(journal, "stalled", limit=1) == [("r1-gone", "stalled")]
    assert await _listed(journal, "running", limit=2) == running[:2]
    assert await _listed(journal, "running") == running
    assert await _listed(journal, limit=2) == running[:2]
    assert (await journal.acquire("r1-gone", owner="me", ttl=60)).token == 2
