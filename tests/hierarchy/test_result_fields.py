"""RunResult's fields resolve in a program that never touched the JSON helpers."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROGRAMS = {
    "help": "import pydoc, regiment; pydoc.render_doc(regiment.RunResult)",
    "signature": "import inspect, regiment; inspect.signature(regiment.RunResult)",
    "decode": (
        "import anyio, msgspec\n"
        "from regiment import Planner, RunResult, ScriptedModel, Team, Worker\n"
        'model = ScriptedModel(lambda r: \'{"steps": [{"description": "a"}]}\''
        " if r.role == 'planner' else 'done')\n"
        "team = Team(name='t', planner=Planner(model=model),"
        " workers=[Worker(name='w', description='d', model=model)])\n"
        "result = anyio.run(team.run, 'go')\n"
        "back = msgspec.json.decode(msgspec.json.encode(result), type=RunResult)\n"
        "assert back.events[-1].__class__.__name__ == 'SynthesisStarted', back.events\n"
        "import pydoc, regiment.hierarchy as h; pydoc.render_doc(h.RunCompleted)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_run_result_resolves_its_event_field_on_its_own(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAMS[name]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
