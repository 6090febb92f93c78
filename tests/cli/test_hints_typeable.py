"""Every command an error line suggests reads the journal the user is using: typed as
printed, it works (the hints of ``resume``, ``show``, ``approvals`` and ``approve`` for a
run that has finished or that the journal does not have)."""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.config import load_team
from regiment.errors import AlreadyFinished, UnknownRun
from regiment.journal import open_journal

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility"


def _suggested(err: str) -> list[list[str]]:
    """The argument lists of the ``regiment ...`` commands in backticks on ``err``'s line."""
    (line,) = err.splitlines()
    return [shlex.split(command)[1:] for command in re.findall(r"`(regiment [^`]*)`", line)]


async def _finished_run(journal: str) -> str:
    code, _, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    assert code == 0, err
    code, out, err = await run_cli("runs", "--journal", journal)
    assert code == 0, err
    return out.split()[0]


async def test_the_commands_suggested_read_the_journal_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # They said `regiment show RUN` and `regiment runs` alone, which read the default
    # journal (here: none), not the --journal J the user gave.
    journal = str(tmp_path / "my runs.db")
    monkeypatch.chdir(tmp_path)
    run_id = await _finished_run(journal)
    cases = [
        (
            ("resume", run_id, "--model", "scripted"),
            f"`regiment show --journal {shlex.quote(journal)} {run_id}`",
        ),
        (("resume", TEAM, run_id, "--model", "scripted"), "`regiment show --journal "),
        (("resume", "run-nope"), f"`regiment runs --journal {shlex.quote(journal)}`"),
        (("show", "run-nope"), "`regiment runs --journal "),
        (("approvals", "run-nope"), "`regiment approvals --journal "),
        (("approve", "run-nope", "req-1"), "`regiment approvals --journal "),
    ]
    for argv, hint in cases:
        code, _, err = await run_cli(*argv, "--journal", journal)
        assert code == 2, (argv, err)
        assert hint in err, (argv, err)
        for suggested in _suggested(err):
            code, out, err = await run_cli(*suggested)  # no --journal, no environment
            assert code == 0, (suggested, err)
            if suggested[0] != "approvals":  # it has none pending: nothing to list
                assert run_id in out, (suggested, out)


async def test_with_the_journal_of_the_environment_no_flag_is_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    journal = str(tmp_path / "runs.db")
    run_id = await _finished_run(journal)
    environ = {"REGIMENT_JOURNAL": journal}
    code, _, err = await run_cli("resume", run_id, environ=environ)
    assert code == 2
    assert err.endswith(f"`regiment show {run_id}` shows it\n"), err


async def test_the_journal_layer_names_its_journal_in_the_command(tmp_path: Path) -> None:
    # A program's error (no CLI around it) said "`regiment runs` lists them" too.
    where = str(tmp_path / "a b.db")
    journal = await open_journal(where)
    try:
        with pytest.raises(UnknownRun) as caught:
            await journal.get_run("run-nope")
    finally:
        await journal.close()
    assert str(caught.value).endswith(f"`regiment runs --journal {shlex.quote(where)}` lists them")


async def test_ask_without_a_terminal_names_the_journal_in_its_commands(tmp_path: Path) -> None:
    # Its way without a terminal (pause, `regiment approvals RUN_ID`, `regiment approve
    # ...`, `regiment resume RUN_ID`) read the default journal, not the run's.
    journal = str(tmp_path / "runs.db")
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", TEAM, GOAL, "--model", "scripted", "--approve", "ask", "--journal", journal]
    code = await run_async(argv, stdout=out, stderr=err, environ={}, stdin=io.StringIO())
    assert code == 2
    commands = re.findall(r"`(regiment [^`]*)`", err.getvalue())
    assert len(commands) == 4, err.getvalue()
    for command in commands:
        assert shlex.split(command)[2:4] == ["--journal", journal], command


async def test_a_programs_resume_of_a_finished_run_names_its_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # RunningTeam.resume (what the service's POST /runs/{id}/resume and `regiment mcp`'s
    # resume tool call) said "`regiment show RUN` shows its result": typed as printed, it
    # read the default journal, not the one the run is in.
    journal = str(tmp_path / "served runs.db")
    run_id = await _finished_run(journal)
    team = load_team(TEAM, model="scripted")
    async with team.start(journal=journal) as running:
        with pytest.raises(AlreadyFinished) as caught:
            await running.resume(run_id)
    (command,) = re.findall(r"`(regiment [^`]*)`", str(caught.value))
    assert command == f"regiment show --journal {shlex.quote(journal)} {run_id}"
    monkeypatch.chdir(REPO / "examples")  # elsewhere, with no journal of its own
    code, out, err = await run_cli(*shlex.split(command)[1:])
    assert code == 0, err
    assert run_id in out
