"""What a user walking issue #17's CLI sequence found, kept fixed.

An edit is checked against the tool's schema before it is recorded (with the team
file the run recorded, or ``--team``); a run paused with ``--no-journal`` does not
point at ``regiment approvals``; a denial does not read as ``ok``; a missing
module's error names ``--app-dir``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from regiment import Deny
from regiment.config import load_team
from regiment.errors import ApprovalError
from regiment.journal import ApprovalDecided, open_journal

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


async def _pending(journal: str, run_id: str) -> list[dict[str, object]]:
    code, out, err = await run_cli("approvals", run_id, "--json", "--journal", journal)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


async def _decisions(journal: str, run_id: str) -> list[ApprovalDecided]:
    opened = await open_journal(journal)
    try:
        return [
            e.record for e in await opened.read(run_id) if isinstance(e.record, ApprovalDecided)
        ]
    finally:
        await opened.close()


async def test_an_edit_is_checked_against_the_file_the_run_recorded(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, _, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    assert code == 3, err
    run_id = err.splitlines()[-1].rsplit(" ", 1)[1]
    (row,) = await _pending(journal, run_id)
    request_id = str(row["request_id"])
    # No --team: the team file `regiment run` recorded gives the tool's schema.
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--edit", '{"order_id": 77120}', "--journal", journal
    )
    assert code == 2
    assert "order_id: Input should be a valid string" in err
    assert f"request {request_id} stays pending" in err
    assert await _decisions(journal, run_id) == []
    assert [r["request_id"] for r in await _pending(journal, run_id)] == [request_id]


async def test_an_edit_on_a_run_without_a_team_file_needs_team(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    async with load_team(TEAM, model="scripted").start(journal=journal) as running:
        result = await running.run(GOAL)  # from code: no team file on record
    (request,) = result.pending_approvals
    edit = ("--edit", '{"order_id": 77120}', "--journal", journal)
    code, _, err = await run_cli("approve", result.run_id, request.request_id, *edit)
    assert code == 2
    assert "has no team file on record to check the edited arguments against" in err
    assert "pass --team TEAM_FILE" in err
    assert await _decisions(journal, result.run_id) == []  # nothing unchecked was recorded
    code, _, err = await run_cli(
        "approve", result.run_id, request.request_id, *edit, "--team", TEAM
    )
    assert code == 2
    assert "do not validate" in err
    good = ("--edit", '{"order_id": "77120"}', "--team", TEAM, "--journal", journal)
    code, out, err = await run_cli("approve", result.run_id, request.request_id, *good)
    assert code == 0, err
    assert (
        f"to the service that started it, or regiment resume --journal {journal} TEAM_FILE "
        f"{result.run_id}\n"
    ) in out
    (decided,) = await _decisions(journal, result.run_id)
    assert decided.approval_id == request.request_id


async def test_a_run_paused_without_a_journal_says_it_cannot_go_on() -> None:
    code, out, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--no-journal")
    assert code == 3, err
    assert out == ""
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    assert "regiment approvals" not in line
    assert "--no-journal kept the run out of the journal, so it cannot go on" in line


async def test_a_denial_shows_as_no(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, _, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    run_id = err.splitlines()[-1].rsplit(" ", 1)[1]
    (row,) = await _pending(journal, run_id)
    deny = ("--deny", "over the limit", "--by", "bo", "--journal", journal)
    code, _, err = await run_cli("approve", run_id, str(row["request_id"]), *deny)
    assert code == 0, err
    code, out, err = await run_cli("resume", run_id, "--model", "scripted", "--journal", journal)
    assert code == 0, err
    assert f"  no issue_refund [{row['request_id']}]: deny by bo" in err
    assert "denied: over the limit" in out


async def test_a_module_that_cannot_be_imported_points_at_app_dir(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in ("REGIMENT_JOURNAL", "PYTHONPATH")}
    done = await anyio.run_process(
        [sys.executable, "-m", "regiment", "validate", TEAM],
        check=False,
        cwd=tmp_path,  # not the repository: `examples` is not importable from here
        env=environ,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 2
    assert "no module named 'examples'" in stderr
    assert "or the one --app-dir DIR names" in stderr


@pytest.mark.parametrize("reason", ["", "  "])
async def test_a_denial_needs_a_reason(tmp_path: Path, reason: str) -> None:
    """A blank reason would tell the worker's model only ``denied: `` (the service
    refused one already; the command and ``approve()`` took it)."""
    journal = str(tmp_path / "runs.db")
    code, _, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    assert code == 3, err
    run_id = err.splitlines()[-1].rsplit(" ", 1)[1]
    (row,) = await _pending(journal, run_id)
    request_id = str(row["request_id"])
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--deny", reason, "--journal", journal
    )
    assert code == 2
    assert err.splitlines()[-1] == (
        "regiment: error: a denial needs a reason: the worker's model is told `denied: <reason>` "
        '(Deny(reason=...), `regiment approve --deny REASON`, the service\'s "reason"); '
        f"request {request_id} stays pending, decide again"
    )
    assert await _decisions(journal, run_id) == []
    async with load_team(TEAM, model="scripted").start(journal=journal) as running:
        with pytest.raises(ApprovalError, match="a denial needs a reason") as caught:
            await running.approve(request_id, Deny(reason=reason))
        assert caught.value.kind == "invalid"
    assert await _decisions(journal, run_id) == []
    assert [r["request_id"] for r in await _pending(journal, run_id)] == [request_id]
    # Without a journal, the paused run's request is this team's alone: refused alike.
    async with load_team(TEAM, model="scripted").start() as running:
        (request,) = (await running.run(GOAL)).pending_approvals
        with pytest.raises(ApprovalError, match="a denial needs a reason"):
            await running.approve(request.request_id, Deny(reason=reason))
        assert await running.pending_approvals() == (request,)
