"""``regiment resume RUN_ID``: the journal records the team file ``regiment run`` used.

Real ``python -m regiment`` processes on a real SQLite journal: the run pauses
(exit 3), ``approvals`` lists, ``approve`` decides, and ``resume`` with the run id
alone (no team file, no ``--app-dir``) finishes the run; and when it cannot find
the file (a run started from code, a file that is gone), it says to pass it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.journal import RunCreated, TeamFile, ToolCallFinished, open_journal
from tests.cli.helpers import regiment_process

# Up to eight `python -m regiment` processes a test, one after another, each a fresh
# interpreter: 25-30 s on a loaded machine, and past the 60 s default once (the
# timeout then killed the xdist worker). The limit guards against a hang, not speed.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "refund" / "team_approval.toml"
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


def _paused(team: Path, cwd: Path, backend: str, *journal: str) -> tuple[str, str]:
    """Run the refund goal until it pauses; its run id and its one request id."""
    run = regiment_process(
        "run",
        str(team),
        GOAL,
        "--model",
        "scripted",
        "--backend",
        backend,
        "--app-dir",
        str(REPO),
        *journal,
        cwd=cwd,
    )
    assert run.returncode == 3, run.stderr
    (line,) = [x for x in run.stderr.splitlines() if x.startswith("paused:")]
    run_id = line.rsplit(" ", 1)[1]
    listed = regiment_process("approvals", run_id, "--json", *journal, cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    (row,) = [json.loads(x) for x in listed.stdout.splitlines()]
    assert (row["run_id"], row["tool"], row["step_id"]) == (run_id, "issue_refund", "s2")
    return run_id, str(row["request_id"])


async def _refunds(journal: Path, run_id: str) -> list[ToolCallFinished]:
    opened = await open_journal(str(journal))
    try:
        records = [e.record for e in await opened.read(run_id)]
    finally:
        await opened.close()
    return [
        r
        for r in records
        if isinstance(r, ToolCallFinished) and r.result.tool_name == "issue_refund"
    ]


async def test_resume_with_the_run_id_alone_finishes_a_paused_run(
    tmp_path: Path, anyio_backend: str
) -> None:
    # The default journal (.regiment/journal.db here), the team file by its absolute path.
    run_id, request_id = _paused(EXAMPLE, tmp_path, anyio_backend)
    journal = tmp_path / ".regiment" / "journal.db"
    opened = await open_journal(str(journal))
    try:
        (first, *_) = await opened.read(run_id)
    finally:
        await opened.close()
    assert isinstance(first.record, RunCreated)
    assert first.record.team_file == TeamFile(path=str(EXAMPLE), app_dir=str(REPO))

    shown = regiment_process("show", run_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"team file: {EXAMPLE}" in shown.stdout.splitlines()
    shown_json = json.loads(regiment_process("show", run_id, "--json", cwd=tmp_path).stdout)
    assert (shown_json["team_file"], shown_json["app_dir"]) == (str(EXAMPLE), str(REPO))

    edited = '{"order_id": "77120"}'
    decided = regiment_process(
        "approve", run_id, request_id, "--edit", edited, "--by", "ana", cwd=tmp_path
    )
    assert decided.returncode == 0, decided.stderr
    assert f"continue with: regiment resume {run_id}" in decided.stdout
    assert await _refunds(journal, run_id) == []  # nothing ran before the resume

    # One positional, and no --app-dir: the run's file and import root come from the journal.
    resumed = regiment_process(
        "resume", run_id, "--model", "scripted", "--backend", anyio_backend, cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "on the way" in resumed.stdout  # the e-mail after the refund
    (refund,) = await _refunds(journal, run_id)  # the body ran once, with the approved arguments
    assert refund.result.arguments == {"order_id": "77120"}
    assert not refund.result.is_error
    again = regiment_process("resume", run_id, cwd=tmp_path)
    assert again.returncode == 2
    assert f"run {run_id!r} has already finished (completed)" in again.stderr


async def test_a_run_started_from_code_needs_its_team_file(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    team = load_team(EXAMPLE, model="scripted")
    async with team.start(journal=str(journal)) as running:
        result = await running.run(GOAL)
    assert result.status == "paused"
    run_id, env = result.run_id, {"REGIMENT_JOURNAL": str(journal)}

    alone = regiment_process("resume", run_id, "--model", "scripted", cwd=tmp_path, env=env)
    assert alone.returncode == 2
    assert "has no team file on record" in alone.stderr
    assert f"pass its team file: regiment resume TEAM_FILE {run_id}" in alone.stderr
    (request,) = result.pending_approvals
    decided = regiment_process("approve", run_id, request.request_id, cwd=tmp_path, env=env)
    assert decided.returncode == 0, decided.stderr
    assert f"service that started it, or regiment resume TEAM_FILE {run_id}\n" in decided.stdout

    both = regiment_process(
        "resume",
        str(EXAMPLE),
        run_id,
        "--model",
        "scripted",
        "--app-dir",
        str(REPO),
        cwd=tmp_path,
        env=env,
    )
    assert both.returncode == 0, both.stderr
    assert "on the way" in both.stdout
    (refund,) = await _refunds(journal, run_id)
    assert refund.result.arguments == {"order_id": "77120"}


async def test_a_team_file_that_is_gone_or_changed(tmp_path: Path, anyio_backend: str) -> None:
    journal = str(tmp_path / "runs.db")
    team = tmp_path / "teams" / "refunds.toml"
    team.parent.mkdir()
    shutil.copy(EXAMPLE, team)
    run_id, request_id = _paused(team, tmp_path, anyio_backend, "--journal", journal)
    moved = tmp_path / "elsewhere.toml"
    team.rename(moved)
    decided = regiment_process("approve", run_id, request_id, "--journal", journal, cwd=tmp_path)
    assert decided.returncode == 0, decided.stderr
    assert decided.stdout.endswith(  # it said "regiment resume TEAM_FILE ...", not why
        f"continue with: regiment resume --journal {journal} TEAM_FILE {run_id} "
        f"(its team file {team} is gone)\n"
    )

    gone = regiment_process(
        "resume", run_id, "--journal", journal, "--model", "scripted", cwd=tmp_path
    )
    assert gone.returncode == 2
    assert f"was started from the team file {team}, which is gone" in gone.stderr
    assert f"regiment resume TEAM_FILE {run_id}" in gone.stderr

    changed = moved.read_text(encoding="utf-8").replace("max_steps = 6", "max_steps = 7")
    team.write_text(changed, encoding="utf-8")  # back in place, but configured differently
    refused = regiment_process(
        "resume", run_id, "--journal", journal, "--model", "scripted", cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "differently configured team" in refused.stderr
    assert "--force" in refused.stderr
    assert await _refunds(tmp_path / "runs.db", run_id) == []

    forced = regiment_process(
        "resume",
        run_id,
        "--force",
        "--journal",
        journal,
        "--model",
        "scripted",
        "--backend",
        anyio_backend,
        cwd=tmp_path,
    )
    assert forced.returncode == 0, forced.stderr
    (refund,) = await _refunds(tmp_path / "runs.db", run_id)
    assert refund.result.arguments == {"order_id": "77120"}


def test_unknown_runs_and_no_journal(tmp_path: Path) -> None:
    # Only regiment processes (no await): a plain test, not once per anyio backend.
    no_run = regiment_process("resume", str(EXAMPLE), cwd=tmp_path)
    assert no_run.returncode == 2
    assert "that is a team file; give the run too" in no_run.stderr
    missing = regiment_process("resume", "run-nope", cwd=tmp_path)
    assert missing.returncode == 2
    assert "no journal at" in missing.stderr
    run_id, _ = _paused(EXAMPLE, tmp_path, "asyncio")
    unknown = regiment_process("resume", "run-nope", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "no run 'run-nope'; `regiment runs` lists them\n" in unknown.stderr
    shown = regiment_process("show", "run-nope", cwd=tmp_path)
    assert shown.returncode == 2
    assert shown.stderr.count("`regiment runs` lists") == 1  # the hint once, not twice
    off = regiment_process("resume", run_id, "--no-journal", cwd=tmp_path)
    assert off.returncode == 2
    assert off.stderr.splitlines()[-1] == (
        "regiment: error: unrecognized arguments: --no-journal; regiment resume continues a "
        "journaled run: drop --no-journal; see `regiment resume --help`"
    )
    # Its usage offered --no-journal, which it always refused.
    usage = regiment_process("resume", "--help", cwd=tmp_path)
    assert (usage.returncode, "--no-journal" in usage.stdout) == (0, False)


async def test_a_run_another_owner_holds_is_refused_with_exit_2_and_when_to_retry(
    tmp_path: Path,
) -> None:
    # Say its owner was killed a moment ago: its lease still runs, so nothing may run
    # the run yet; that is a refusal (exit 2) that says when to retry, not a failed run.
    run_id, _ = _paused(EXAMPLE, tmp_path, "asyncio")
    journal = tmp_path / ".regiment" / "journal.db"
    opened = await open_journal(str(journal))
    try:
        await opened.acquire(run_id, owner="gone:4242", ttl=600)
    finally:
        await opened.close()
    resumed = regiment_process("resume", run_id, "--model", "scripted", cwd=tmp_path)
    assert resumed.returncode == 2, resumed.stderr
    last = resumed.stderr.splitlines()[-1]
    assert last.startswith("regiment: error: ")
    assert "owned by 'gone:4242'" in last
    assert "if it died, its lease lapses by itself, so retry in" in last
