"""Ray stays out of everything that does not place a worker on it."""

from __future__ import annotations

from pathlib import Path

from tests.fresh_interpreter import run_fresh

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
    assert run_fresh(code, cwd=ROOT).strip() == "ok"
