"""A run with an undecided approval whose process died before it got to its pause (its
other steps still worked) lists as ``stalled``, as a running run whose owner is gone
does, not ``paused``: nobody runs it, and a follower of it on a service that shares the
journal waited for a pause that never came. A run that got to its pause (its lease given
up) still lists ``paused``; so does one whose owner still runs.

On every backend (memory, a real SQLite file, a real PostgreSQL server), with a real
process as the owner, killed; the journal's clock moved by hand for a lease that lapses.
"""

from __future__ import annotations

import sys

import anyio
import pytest

from regiment.journal import Journal, RunStatus, process_owner

from .records import Clock, approval, created
from .test_dead_owner import _OWNER, _owner_of

pytestmark = pytest.mark.anyio


async def _listed(journal: Journal, status: RunStatus | None = None) -> list[tuple[str, str]]:
    return [(r.run_id, r.status) for r in await journal.list_runs(status=status)]


async def test_a_paused_run_whose_owner_died_before_its_pause_lists_as_stalled(
    journal: Journal, clock: Clock
) -> None:
    child = await anyio.open_process([sys.executable, "-c", _OWNER])
    async with child:
        owner = await _owner_of(child)
        owners = {
            "p1-killed": owner,  # dies with its request pending
            "p2-paused": process_owner(),  # got to its pause: its lease given up
            "p3-lapsed": f"x{owner}",  # another host's: its lease runs out
            "p4-working": process_owner(),  # still runs, beside its request
        }
        for minutes, (run_id, named) in enumerate(owners.items()):
            ttl = 10 if run_id == "p3-lapsed" else 600
            lease = await journal.create_run(created(run_id, minutes=minutes), owner=named, ttl=ttl)
            await journal.append(lease, approval(run_id), durable=True)
            if run_id == "p2-paused":
                await journal.release(lease)
        assert (await journal.get_run("p1-killed")).status == "paused"  # its owner still runs
        assert child.stdin is not None
        child.kill()
        await child.wait()
    clock.advance(11)  # p3's lease runs out; the others' have 589 s to go
    newest_first = [("p4-working", "paused"), ("p3-lapsed", "stalled")]
    newest_first += [("p2-paused", "paused"), ("p1-killed", "stalled")]
    assert await _listed(journal) == newest_first
    assert (await journal.get_run("p1-killed")).status == "stalled"
    assert (await journal.get_run("p3-lapsed")).status == "stalled"
    assert await _listed(journal, "stalled") == [("p3-lapsed", "stalled"), ("p1-killed", "stalled")]
    assert await _listed(journal, "paused") == [("p4-working", "paused"), ("p2-paused", "paused")]
    assert [(r.run_id, r.status) for r in await journal.list_runs(status="paused", limit=1)] == [
        ("p4-working", "paused")
    ]
    # Its request is still undecided (a decision, then a resume, goes on with it), and a
    # resume takes it over at once.
    assert [r.approval_id for r in await journal.pending_approvals("p1-killed")] == ["a1"]
    assert (await journal.acquire("p1-killed", owner="me", ttl=60)).token == 2
