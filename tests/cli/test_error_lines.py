"""Every command says an error the same way: its last line on stderr is ``regiment:
error: ...`` and it exits 2. ``approvals`` and ``approve`` said ``regiment: approvals:
...`` / ``regiment: approve: ...``, and argparse's usage errors ``regiment run: error:
...``, beside the ``regiment: error: ...`` of every other error."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

MISSING = "missing/runs.db"  # under the test's directory: never there

CASES = {
    "no command": [],
    "unknown command": ["bogus"],
    "run: no goal": ["run", "team.toml"],
    "runs: bad status": ["runs", "--status", "done"],
    "show: option of run": ["show", "run-1", "--no-journal"],
    "validate: no file": ["validate", "nofile.toml"],
    "mcp: no file": ["mcp", "nofile.toml"],
    "serve: bad port": ["serve", "team.toml", "--port", "99999"],
    "resume: no journal": ["resume", "run-1", "--journal", MISSING],
    "show: no journal": ["show", "run-1", "--journal", MISSING],
    "approvals: no journal": ["approvals", "--journal", MISSING],
    "approve: no journal": ["approve", "run-1", "apr-1", "--journal", MISSING],
    "approve: two decisions": ["approve", "run-1", "apr-1", "--deny", "no", "--edit", "{}"],
}


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
async def test_every_error_line_reads_regiment_error(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = await run_cli(*argv)
    said = capsys.readouterr().err + err  # argparse writes to sys.stderr itself
    assert (code, out) == (2, ""), said
    last = said.splitlines()[-1]
    assert last.startswith("regiment: error: "), said
    assert not [line for line in said.splitlines() if ": error:" in line and line != last]
