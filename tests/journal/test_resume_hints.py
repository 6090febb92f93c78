"""What a program's resume (``RunningTeam.resume``) says to do next names the journal the
run is in, and says it from code and from a terminal: the command it shows, typed as
printed anywhere, reads that journal.

A resume of a nested team's run said "(`regiment resume TOP`)": typed as printed, that
read the default journal of the directory it was typed in, not the program's, and told a
program nothing it could call. An in-memory journal's finished run was told to run
`regiment show RUN --journal '(in memory)'` (and an unknown run's, `regiment runs --journal
'(in memory)'`), a file no command can open.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from regiment.errors import AlreadyFinished, JournalError, UnknownRun
from regiment.journal import MemoryJournal, nested_run_id
from tests.cli.helpers import run_cli

from .durable_team import Ledger, make_office
from .test_nested_resume import NESTED_GOAL

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]


def _commands(message: str) -> list[list[str]]:
    """The argument lists of the ``regiment ...`` commands in backticks in ``message``."""
    return [shlex.split(command)[1:] for command in re.findall(r"`(regiment [^`]*)`", message)]


@pytest.fixture(params=["sqlite", "postgres"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A journal file whose name needs quoting, or a PostgreSQL journal in a schema of its
    own (named by the URL's ``options``: a command without them reads another schema)."""
    if request.param == "sqlite":
        return str(tmp_path / "office runs.db")
    return str(request.getfixturevalue("postgres_url"))


async def test_a_programs_resume_of_a_nested_run_says_how_to_resume_its_top_run(
    journal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (PostgreSQL: the journal's name in messages left the URL's options out)
    async with make_office(ledger=Ledger(tmp_path)).start(journal=journal) as running:
        top = (await running.run(NESTED_GOAL)).run_id
        with pytest.raises(JournalError) as caught:
            await running.resume(nested_run_id(top, 1, "t1"))
    said = str(caught.value)
    assert f"running.resume({top!r}) on a team started with that journal" in said  # in code
    (command,) = _commands(said)
    assert command == ["resume", "--journal", journal, top]  # and at a terminal
    monkeypatch.chdir(REPO / "examples")  # elsewhere, with no journal of its own
    code, _, err = await run_cli(*command)
    assert code == 2  # that journal's top run: it has finished, so there is nothing to resume
    assert f"run {top!r} has already finished (completed)" in err, err


async def test_an_in_memory_journals_messages_suggest_no_command(tmp_path: Path) -> None:
    journal = MemoryJournal()
    async with make_office(ledger=Ledger(tmp_path)).start(journal=journal) as running:
        top = (await running.run(NESTED_GOAL)).run_id
        with pytest.raises(AlreadyFinished) as finished:
            await running.resume(top)
        with pytest.raises(JournalError) as nested:
            await running.resume(nested_run_id(top, 1, "t1"))
        with pytest.raises(UnknownRun) as unknown:
            await running.resume("run-nope")
    assert str(unknown.value) == (
        "journal (in memory) has no run 'run-nope'; journal.list_runs() lists them"
    )
    assert str(finished.value).endswith(
        f"there is nothing to resume: in code, journal.get_run({top!r}) and journal.read({top!r})"
    )
    assert f"resume {top!r} (running.resume({top!r}) on a team started with that journal)" in str(
        nested.value
    )
    assert "regiment" not in str(finished.value) + str(nested.value) + str(unknown.value)
