"""``regiment resume RUN_ID``: the journal records the team file ``regiment run`` used.

On a real SQLite journal: the run pauses (exit 3), ``approvals`` lists, ``approve``
decides, and ``resume`` with the run id alone (no team file, no ``--app-dir``) finishes
the run; and when it cannot find the file (a run started from code, a file that is gone),
it says to pass it. Each ``resume`` that runs the run on is a real ``python -m regiment``
process (a fresh interpreter imports the team file from the journal's record alone); the
commands around it run in this process (``run_cli``): a child each, 46 in all, took
3 s each on a loaded machine and made this one of the suite's slowest files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.journal import RunCreated, TeamFile, ToolCallFinished, open_journal
from tests.cli.helpers import regiment_process, run_cli

# A `python -m regiment` process or two a test, each a fresh interpreter: slow on a
# loaded machine. The limit guards against a hang, not speed.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "refund" / "team_approval.toml"
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


async def _paused(team: Path, *journal: str) -> tuple[str, str]:
    """Run the refund goal until it pauses; its run id and its one request id."""
    code, _, err = await run_cli(
        "run", str(team), GOAL, "--model", "scripted", "--app-dir", str(REPO), *journal
    )
    assert code == 3, err
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    run_id = line.rsplit(" ", 1)[1]
    code, listed, err = await run_cli("approvals", run_id, "--json", *journal)
    assert code == 0, err
    (row,) = [json.loads(x) for x in listed.splitlines()]
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
    run_id, request_id = await _paused(EXAMPLE)
    journal = tmp_path / ".regiment" / "journal.db"
    opened = await open_journal(str(journal))
    try:
        (first, *_) = await opened.read(run_id)
    finally:
        await opened.close()
    assert isinstance(first.record, RunCreated)
    assert first.record.team_file == TeamFile(path=str(EXAMPLE), app_dir=str(REPO))

    code, shown, err = await run_cli("show", run_id)
    assert code == 0, err
    assert f"team file: {EXAMPLE}" in shown.splitlines()
    shown_json = json.loads((await run_cli("show", run_id, "--json"))[1])
    assert (shown_json["team_file"], shown_json["app_dir"]) == (str(EXAMPLE), str(REPO))

    edited = '{"order_id": "77120"}'
    code, decided, err = await run_cli(
        "approve", run_id, request_id, "--edit", edited, "--by", "ana"
    )
    assert code == 0, err
    assert f"continue with: regiment resume {run_id}" in decided
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
    code, _, err = await run_cli("resume", run_id)
    assert code == 2
    assert f"run {run_id!r} has already finished (completed)" in err


async def test_a_run_started_from_code_needs_its_team_file(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    team = load_team(EXAMPLE, model="scripted")
    async with team.start(journal=str(journal)) as running:
        result = await running.run(GOAL)
    assert result.status == "paused"
    run_id, env = result.run_id, {"REGIMENT_JOURNAL": str(journal)}

    code, _, err = await run_cli("resume", run_id, "--model", "scripted", environ=env)
    assert code == 2
    assert "has no team file on record" in err
    assert f"pass its team file: regiment resume TEAM_FILE {run_id}" in err
    (request,) = result.pending_approvals
    code, decided, err = await run_cli("approve", run_id, request.request_id, environ=env)
    assert code == 0, err
    assert f"service that started it, or regiment resume TEAM_FILE {run_id}\n" in decided

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
    run_id, request_id = await _paused(team, "--journal", journal)
    moved = tmp_path / "elsewhere.toml"
    team.rename(moved)
    code, decided, err = await run_cli("approve", run_id, request_id, "--journal", journal)
    assert code == 0, err
    assert decided.endswith(  # it said "regiment resume TEAM_FILE ...", not why
        f"continue with: regiment resume --journal {journal} TEAM_FILE {run_id} "
        f"(its team file {team} is gone)\n"
    )

    code, _, gone = await run_cli("resume", run_id, "--journal", journal, "--model", "scripted")
    assert code == 2
    assert f"was started from the team file {team}, which is gone" in gone
    assert f"regiment resume TEAM_FILE {run_id}" in gone

    changed = moved.read_text(encoding="utf-8").replace("max_steps = 6", "max_steps = 7")
    team.write_text(changed, encoding="utf-8")  # back in place, but configured differently
    code, _, refused = await run_cli("resume", run_id, "--journal", journal, "--model", "scripted")
    assert code == 2
    assert "differently configured team" in refused
    assert "): the planner's prompts or limits changed, so a resume" in refused  # which part
    assert "--force" in refused
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
    assert (  # forced, it still says what changed
        f"run {run_id} is resumed (forced) by a differently configured team 'refunds': "
        "the planner's prompts or limits changed; it may not redo the same run"
    ) in forced.stderr
    (refund,) = await _refunds(tmp_path / "runs.db", run_id)
    assert refund.result.arguments == {"order_id": "77120"}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # once: no backend is under test
async def test_unknown_runs_and_no_journal(tmp_path: Path) -> None:
    code, _, err = await run_cli("resume", str(EXAMPLE))
    assert code == 2
    assert "that is a team file; give the run too" in err
    code, _, err = await run_cli("resume", "run-nope")
    assert code == 2
    assert "no journal at" in err
    run_id, _ = await _paused(EXAMPLE)
    code, _, err = await run_cli("resume", "run-nope")
    assert code == 2
    assert "no run 'run-nope'; `regiment runs` lists them\n" in err
    code, _, err = await run_cli("show", "run-nope")
    assert code == 2
    assert err.count("`regiment runs` lists") == 1  # the hint once, not twice
    # A usage error: argparse writes it to the process's stderr, so a real process says it.
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
    run_id, _ = await _paused(EXAMPLE)
    journal = tmp_path / ".regiment" / "journal.db"
    opened = await open_journal(str(journal))
    try:
        await opened.acquire(run_id, owner="gone:4242", ttl=600)
    finally:
        await opened.close()
    code, _, err = await run_cli("resume", run_id, "--model", "scripted")
    assert code == 2, err
    last = err.splitlines()[-1]
    assert last.startswith("regiment: error: ")
    assert "owned by 'gone:4242'" in last
    assert "if it died, its lease lapses by itself, so retry in" in last
