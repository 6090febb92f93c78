"""What an SQLite journal takes to the disk before a commit returns.

Under ``synchronous="normal"`` (the default) it fsynced no commit at all, so a crash of
the machine could lose a tool call's intent written before the tool's body ran, and a
resume would run the body again as if it had never started. Now a commit that holds a
record written durably runs under SQLite's FULL (in WAL mode: the ``-wal`` file is
fsynced as it commits), the others under NORMAL; ``"full"`` and ``"off"`` hold for every
commit. Read from SQLite's own trace of the journal's connection: the level a transaction
ran under is the last ``PRAGMA synchronous`` before it (SQLite refuses one inside it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.errors import ConfigError
from regiment.journal import SqliteJournal
from regiment.tools import Approve

from .durable_team import GOAL, Ledger, make_team
from .records import created, event, new_id
from .sql_trace import Transaction, traced, transactions

pytestmark = pytest.mark.anyio

TTL = 30.0

# What a run appends with durable=True: its creation (its id leaves the process next), a
# tool call's intent (before the body runs) and result, a pause for approval and the
# decision, a resume, the end.
DURABLE = frozenset(
    {
        "run_created",
        "tool_call_started",
        "tool_call_finished",
        "approval_requested",
        "approval_decided",
        "run_resumed",
        "run_finished",
    }
)


async def test_a_runs_durable_records_reach_the_disk_as_they_commit(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    statements = traced(journal)
    try:
        async with make_team(approve="bolt").start(journal=journal) as running:
            paused = await running.run(GOAL, deps=ledger)
            assert paused.status == "paused"
            (request,) = paused.pending_approvals
            await running.approve(request.request_id, Approve(), by="ana")
            done = await running.resume(paused.run_id, deps=ledger)
    finally:
        await journal.close()
    assert done.status == "completed"
    committed = transactions(statements, "normal")
    wrong = [t for t in committed if t.level != ("full" if t.kinds & DURABLE else "normal")]
    assert wrong == [], committed
    assert {kind for t in committed for kind in t.kinds} >= DURABLE
    # The run's creation reaches the disk before its id is handed out: a crash of the
    # machine right after left a caller (the service's answer, `regiment run`'s line)
    # holding an id that named no run.
    assert Transaction("full", frozenset({"run_created"})) in committed


@pytest.mark.parametrize(
    ("synchronous", "levels"),
    [
        ("normal", ["full", "normal", "full", "normal"]),  # the creation, then as appended
        ("full", ["full"] * 4),
        ("off", ["off"] * 4),
        ("FULL", ["full"] * 4),
    ],
)
async def test_each_level_holds_for_the_commits_it_names(
    tmp_path: Path, synchronous: str, levels: list[str]
) -> None:
    journal = await SqliteJournal.open(tmp_path / "runs.db", synchronous=synchronous)  # type: ignore[arg-type]
    statements = traced(journal)
    run_id = new_id()
    try:
        lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
        await journal.append(lease, event(run_id, 1))
        await journal.flush()  # committed, not a durable record: no fsync under normal
        await journal.append(lease, event(run_id, 2), durable=True)
        await journal.append(lease, event(run_id, 3))
        await journal.release(lease)
    finally:
        await journal.close()
    committed = transactions(statements, synchronous.lower())
    assert [t.level for t in committed] == levels, committed


@pytest.mark.parametrize("synchronous", ["ful", "extra", 2, "normal; PRAGMA x"])
async def test_a_level_that_is_not_one_is_refused(tmp_path: Path, synchronous: object) -> None:
    # SQLite takes a level it does not know as NORMAL: "ful" gave no fsync without a word.
    with pytest.raises(ConfigError, match=f"synchronous={synchronous!r} is not a level.*'full'"):
        await SqliteJournal.open(tmp_path / "runs.db", synchronous=synchronous)  # type: ignore[arg-type]
    assert not (tmp_path / "runs.db").exists()
