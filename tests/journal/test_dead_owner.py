"""A lease whose owner is a process of this machine that provably died counts as lapsed.

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
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from regiment.errors import LeaseHeld
from regiment.journal import RunCreated, open_journal, process_owner

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
