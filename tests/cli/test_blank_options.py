"""Options given blank or not a number say so, as usage errors (exit 2), instead of being
taken for something else ("nan s is too short", "refusing to serve on  without a token",
"cannot write : ...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team.toml")

_EVENTS_TO = ("--events", "jsonl", "--events-file")
CASES = [
    (("serve", TEAM, "--lease-ttl", "nan"), "argument --lease-ttl: not a finite number of seconds"),
    (("serve", TEAM, "--lease-ttl", "inf"), "argument --lease-ttl: not a finite number of seconds"),
    (("serve", TEAM, "--host", " "), "argument --host: it is blank; give an address"),
    (("run", TEAM, "goal", "--model", ""), "argument --model: it is blank; give a model spec"),
    (("mcp", TEAM, "--model", " "), "argument --model: it is blank; give a model spec"),
    (  # it recorded the decision as nobody's
        ("approve", "run-1", "apr-1", "--by", " "),
        "argument --by: it is blank; give who decided, or leave --by out",
    ),
    (
        ("run", TEAM, "goal", "--model", "scripted", "--no-journal", *_EVENTS_TO, ""),
        "--events-file is blank; give the file to write the events to",
    ),
]


@pytest.mark.parametrize(("argv", "said"), CASES)
async def test_a_blank_or_endless_value_is_named(
    argv: tuple[str, ...], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = await run_cli(*argv)
    err += capsys.readouterr().err  # where argparse writes its usage errors
    assert (code, out) == (2, ""), err
    assert f"regiment: error: {said}" in err


async def test_a_team_file_for_a_run_names_the_journal_to_list(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    code, _, err = await run_cli("resume", TEAM, "--journal", journal)
    assert code == 2
    assert err.endswith(f"(`regiment runs --journal {journal}` lists the runs)\n"), err
