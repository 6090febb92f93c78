"""A team whose stdio MCP server will not start: ``regiment run`` names the team file's
line and the entry of that server, as ``regiment validate`` names those it can check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .helpers import regiment_process

_TEAM = """name = "t"
model = "scripted"
brain = "sayer:brain"

[[workers]]
name = "a"
description = "Idle."

[[workers]]
name = "b"
description = "Has servers."

[[workers.mcp]]
name = "fine"
command = [{python!r}, "-c", "import time; time.sleep(60)"]
start_timeout = 3  # it fails too, after broken has (errors name the first); waited out in full

[[workers.mcp]]
name = "broken"
command = [{python!r}, "-c", "import sys; sys.exit(3)"]
"""

_BRAIN = """
from regiment.models import text_response


def brain(request):
    return text_response('{"steps": []}')
"""


@pytest.mark.parametrize("journal", [False, True], ids=["no-journal", "journal"])
def test_a_server_that_will_not_start_is_named_with_its_line(tmp_path: Path, journal: bool) -> None:
    # It said only "the team could not start: MCP server 'broken' ... could not be started".
    (tmp_path / "sayer.py").write_text(_BRAIN, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(_TEAM.format(python=sys.executable), encoding="utf-8")
    where = ["--journal", str(tmp_path / "runs.db")] if journal else ["--no-journal"]
    done = regiment_process(
        "run", str(team), "go", "--app-dir", str(tmp_path), *where, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"regiment: error: {team}:18: workers[1].mcp[1]: the team could not start: "
        "MCP server 'broken' ("
    ), last
    assert "could not be started" in last
