"""``regiment run``'s last line counts the model calls of a nested team whose run failed
(its planner never gave a valid plan): each was made and paid for. It counted the top
team's only (4 model calls for the 16 made)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

BRAINS = """
from pathlib import Path

from regiment.models import text_response

CALLS = Path(__file__).with_name("calls.txt")


def _made(role):
    with CALLS.open("a", encoding="utf-8") as calls:
        calls.write(role + "\\n")


def front(request):
    _made(request.role)
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"description": "ask the desk"}]}')
    return text_response("done")


def desk(request):
    _made(request.role)
    if request.role in ("planner", "replanner"):
        return text_response("[1, 2")  # never a plan
    return text_response("done")
"""


async def test_the_last_line_counts_the_failed_nested_runs_calls(tmp_path: Path) -> None:
    module = f"nested_brains_{uuid.uuid4().hex[:8]}"  # unique: imported modules are cached
    (tmp_path / f"{module}.py").write_text(BRAINS, encoding="utf-8")
    (tmp_path / "desk.toml").write_text(
        f'name = "desk"\nbrain = "{module}:desk"\n\n'
        '[[workers]]\nname = "clerk"\ndescription = "Answers."\n',
        encoding="utf-8",
    )
    team = tmp_path / "front.toml"
    team.write_text(
        f'name = "front"\nbrain = "{module}:front"\n\n'
        '[[workers]]\nname = "desk"\ndescription = "A team."\nteam = "desk.toml"\n',
        encoding="utf-8",
    )
    code, _, err = await run_cli("run", str(team), "help", "--app-dir", str(tmp_path))
    assert code == 1
    made = (tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert made.count("planner") + made.count("replanner") > 4  # the desk's planner too
    last = [line for line in err.splitlines() if "] run failed (" in line]
    assert len(last) == 1, err
    counted = re.search(r"run failed \(\w+\): (\d+) model calls, ", last[0])
    assert counted is not None, last[0]
    assert int(counted.group(1)) == len(made), last[0]
