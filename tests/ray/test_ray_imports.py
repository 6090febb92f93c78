"""Ray stays out of everything that does not place a worker on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_regiment_and_building_a_placed_worker_does_not_import_ray() -> None:
    code = (
        "import sys, regiment, regiment.cli, regiment.config\n"
        "from regiment import Ray, ScriptedModel, Worker\n"
        "Worker(name='w', description='d', model=ScriptedModel([]), placement=Ray(replicas=2))\n"
        "regiment.load_team('examples/refund/team.toml', model='scripted')\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
