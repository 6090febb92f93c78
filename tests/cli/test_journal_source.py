"""Where the journal came from, in what a command says about it.

A blank ``--journal`` (``--journal "$J"`` with ``J`` unset) is a usage error, exit 2, in
every command that takes it; an empty ``$REGIMENT_JOURNAL`` is the same as none (the
default file here). A journal that cannot be used is named with where it came from:
``--journal``, ``$REGIMENT_JOURNAL`` or the default, never a ``--journal`` nobody gave.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team.toml")

TAKE_JOURNAL = [
    ("runs",),
    ("show", "run-1"),
    ("approvals",),
    ("approve", "run-1", "req-1"),
    ("resume", "run-1"),
    ("run", TEAM, "a goal", "--model", "scripted"),
    ("serve", TEAM),
    ("mcp", TEAM),
]
READ_JOURNAL = [
    ("runs",),
    ("show", "run-1"),
    ("approvals",),
    ("approve", "run-1", "req-1"),
    ("resume", "run-1"),
    ("run", TEAM, "a goal", "--model", "scripted"),
]


@pytest.mark.parametrize("argv", TAKE_JOURNAL, ids=lambda argv: argv[0])
@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "spaces"])
async def test_a_blank_journal_option_is_a_usage_error(
    argv: tuple[str, ...], blank: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run_cli(*argv, "--journal", blank)
    err += capsys.readouterr().err  # where argparse writes its usage errors
    assert (code, out) == (2, ""), err
    assert "regiment: error: argument --journal: it is blank; give an SQLite file" in err
    assert not (tmp_path / ".regiment").exists()


@pytest.mark.parametrize("argv", READ_JOURNAL, ids=lambda argv: argv[0])
async def test_a_journal_from_the_environment_is_named_so(
    argv: tuple[str, ...], tmp_path: Path
) -> None:
    folder = tmp_path / "not-a-journal"
    folder.mkdir()
    code, out, err = await run_cli(*argv, environ={"REGIMENT_JOURNAL": str(folder)})
    assert (code, out) == (2, ""), err
    assert err.startswith(f"regiment: error: $REGIMENT_JOURNAL {folder}: journal {folder} "), err
    assert "--journal " not in err, err
    given = await run_cli(*argv, "--journal", str(folder))
    assert given[0] == 2
    assert given[2].startswith(f"regiment: error: --journal {folder}: journal {folder} "), given


async def test_an_empty_journal_variable_is_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".regiment").mkdir()
    (tmp_path / ".regiment" / "journal.db").mkdir()  # unusable: the error names it
    code, out, err = await run_cli("runs", environ={"REGIMENT_JOURNAL": ""})
    assert (code, out) == (2, ""), err
    default = tmp_path / ".regiment" / "journal.db"
    assert err.startswith(f"regiment: error: journal {default}: journal {default} "), err
