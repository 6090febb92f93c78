"""What a new user meets first, trying the README's commands with a slip in them: each
is one line, exit 2, and says what to give instead. A team file that is not there said
``No such file or directory`` alone (relative to what?); a directory ``Is a directory``;
``--app-dir`` that is not there ``no such directory``; ``serve --keep-runs x`` argparse's
``invalid int value: 'x'``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")


async def _last_line(*argv: str) -> str:
    code, out, err = await run_cli(*argv)
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    return err.splitlines()[-1]


@pytest.mark.parametrize("command", ["run", "validate"])
async def test_a_team_file_that_is_not_there_says_where_it_was_looked_for(
    command: str, tmp_path: Path
) -> None:
    goal = ["goal"] if command == "run" else []
    last = await _last_line(command, "tema.toml", *goal)
    assert last == (
        "regiment: error: tema.toml: cannot read the team file: No such file or directory; "
        f"check the path (a relative one is read from {tmp_path})"  # the test's cwd
    )


async def test_a_directory_for_a_team_file_asks_for_the_file_in_it(tmp_path: Path) -> None:
    (tmp_path / "team.toml").mkdir()
    last = await _last_line("validate", "team.toml")
    assert last == (
        "regiment: error: team.toml: cannot read the team file: Is a directory; give the "
        "path of the .toml or .yaml file in it"
    )


@pytest.mark.parametrize("command", ["run", "validate"])
async def test_an_app_dir_that_is_not_there_says_what_it_is_for(command: str) -> None:
    goal = ["goal"] if command == "run" else []
    last = await _last_line(command, REFUND, *goal, "--app-dir", "no/such/dir")
    assert last == (
        "regiment: error: --app-dir no/such/dir: no such directory; give the directory the "
        "team file's module:attribute paths are imported from (default: the current one)"
    )


async def test_keep_runs_that_is_no_number_is_a_usage_error_saying_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = await run_cli("serve", REFUND, "--keep-runs", "x")
    printed = capsys.readouterr().err + err  # argparse writes to sys.stderr itself
    assert code == 2
    assert printed.splitlines()[-1] == (
        "regiment: error: argument --keep-runs: not a whole number: 'x'; see "
        "`regiment serve --help`"
    )
