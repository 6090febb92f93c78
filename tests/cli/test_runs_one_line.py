"""``regiment runs`` prints one line per run (``| head -1``, ``| wc -l``, ``grep RUN_ID``
read it so): a goal or a session with a line break in it (a goal pasted from an e-mail, a
service client's text) was printed as it is, so such a run took two lines or more, and the
next line began with the rest of its goal, not with a run id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from regiment.journal import RunCreated, SqliteJournal

from .helpers import run_cli

pytestmark = pytest.mark.anyio


async def test_a_goal_and_a_session_of_several_lines_are_listed_on_one(tmp_path: Path) -> None:
    journal = f"{tmp_path}/runs.db"
    opened = await SqliteJournal.open(journal)
    try:
        start = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
        for minutes, (run_id, goal, session) in enumerate(
            [
                ("run-1", "refund order 7\nthen tell\r\nthe customer\tkindly", "desk\n7"),
                ("run-2", "a goal of one line", None),
            ]
        ):
            record = RunCreated(
                run_id=run_id,
                team="refunds",
                goal=goal,
                session=session,
                config_hash="h",
                created_at=start + timedelta(minutes=minutes),
            )
            await opened.create_run(record, owner="test", ttl=30.0)
    finally:
        await opened.close()
    code, out, err = await run_cli("runs", "--journal", journal)
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["run-2", "run-1"]
    assert lines[1].endswith("refunds  [desk 7]  refund order 7 then tell the customer kindly")
