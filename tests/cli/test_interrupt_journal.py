"""Ctrl-C (a real SIGINT) to a journaled run: the run winds down as a stream left early
does, so every step report it got is journaled, its cut steps' too."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import read_until, regiment_process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")

_BRAIN = '''
import anyio
from regiment.models import ModelRequest, ModelResponse, text_response


async def brain(request: ModelRequest) -> ModelResponse:
    """Plans two steps: s1 is done at once, s2 never ends."""
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "quick"}, '
                             '{"id": "s2", "description": "slow"}]}')
    if "Your step (s2)" in str(request.messages[0].parts[0]):
        await anyio.sleep_forever()
    return text_response("quick done")
'''


def _team(directory: Path) -> Path:
    (directory / "halfway.py").write_text(_BRAIN, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        'name = "halves"\nmodel = "scripted"\nbrain = "halfway:brain"\n\n'
        '[[workers]]\nname = "w"\ndescription = "Works."\n',
        encoding="utf-8",
    )
    return team


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_journals_every_report_the_run_got(tmp_path: Path, backend: str) -> None:
    # The command's cancel reached the team's actors directly, so the planner was stopped
    # under its run ("the run's planner stopped before the run finished (the team
    # stopped)"): a report it had not yet taken (a step just done) was never journaled,
    # and the cut step's report was not either.
    journal = str(tmp_path / "runs.db")
    argv = ["run", str(_team(tmp_path)), "go", "--app-dir", str(tmp_path), "--plain"]
    argv += ["--journal", journal, "--backend", backend]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as child:
        seen: list[str] = []
        read_until(child, "<- s1 done", seen)
        child.send_signal(signal.SIGINT)
        assert child.stderr is not None
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 130, rest
    assert "1 of 2 steps done (s1); was running s2 (w)" in rest
    listed = regiment_process("runs", "--journal", journal, "--json", cwd=tmp_path)
    (run,) = [json.loads(line) for line in listed.stdout.splitlines()]
    shown = regiment_process("show", run["run_id"], "--journal", journal, "--json", cwd=tmp_path)
    record = json.loads(shown.stdout)
    assert record["status"] == "cancelled"
    assert "the team stopped" not in (record["error"] or ""), record["error"]
    steps = {step["step_id"]: step for step in record["steps"]}
    assert (steps["s1"]["status"], steps["s1"]["committed"]) == ("done", True)
    assert steps["s2"]["status"] == "cancelled"  # its report, not "dispatched" alone
