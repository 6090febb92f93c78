"""``--events-file`` given a path the events cannot be written to said the OS's words
alone (``[Errno 21] Is a directory: 'out'``), with nothing about what to give instead.
It now says what is wrong with the path and what it wants: a file path, in a directory
that is there. Either is a usage error before anything runs: exit 2, one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio


async def _refused(tmp_path: Path, events_file: str, *flags: str) -> str:
    team = write_team(tmp_path, "idle")
    argv = ["run", str(team), "goal", "--app-dir", str(tmp_path), *flags]
    code, out, err = await run_cli(*argv, "--events", "jsonl", "--events-file", events_file)
    assert code == 2, err
    assert out == ""
    (only,) = err.splitlines()  # nothing ran: no progress line before it
    return only


@pytest.mark.parametrize("journal", [[], ["--no-journal"]], ids=["journaled", "unjournaled"])
async def test_a_directory_is_refused_asking_for_a_file_path(
    tmp_path: Path, journal: list[str]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    only = await _refused(tmp_path, str(folder), *journal)
    assert only == (
        f"regiment: error: --events-file: cannot write {folder}: it is a directory; give a "
        f"file path (in it, {folder / 'events.jsonl'} say)"
    )
    assert list(folder.iterdir()) == []


async def test_a_file_in_a_missing_directory_names_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "events.jsonl"
    only = await _refused(tmp_path, str(target))
    assert only == (
        f"regiment: error: --events-file: cannot write {target}: its directory "
        f"{target.parent} is not there; create it, or give a file in one that is"
    )
    assert not target.parent.exists()
