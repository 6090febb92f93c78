"""A worker whose modules the Ray nodes cannot import (a package installed only where
the team's process runs): ``Team.start()`` fails with a ``ConfigError`` that names the
worker, what could not be imported and what to do, and no replica is left running."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
import types
from pathlib import Path
from types import ModuleType

import pytest

from regiment.config import load_team
from regiment.errors import ConfigError
from regiment.hierarchy import Planner, Ray, Team
from regiment.models import ScriptedModel

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

TOOLS = '''
import driver_only  # only the team's process has it

from regiment.tools import tool


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


def brain(request):
    if request.role == "planner":
        return '{"steps": [{"id": "s1", "description": "shout hi", "worker": "loud"}]}'
    return "HI"
'''

TEAM = """
name = "loud"
model = "scripted"
brain = "shouting:brain"

[[workers]]
name = "loud"
description = "Shouts."
tools = ["shouting:shout"]

[workers.placement]
kind = "ray"
num_cpus = 0
"""


@pytest.fixture
def driver_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A module only this process has (the nodes lack its package), and ``shouting``,
    a tool module in ``tmp_path`` that imports it."""
    monkeypatch.setitem(sys.modules, "driver_only", types.ModuleType("driver_only"))
    (tmp_path / "shouting.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "shouting", raising=False)
    (tmp_path / "team.toml").write_text(TEAM)
    return tmp_path / "team.toml"


async def test_a_team_files_tool_module_the_nodes_cannot_import_fails_the_start(
    ray_session: ModuleType, driver_only: Path
) -> None:
    team = load_team(driver_only, model="scripted")  # imports fine here
    with pytest.raises(ConfigError) as raised:
        async with team.start():
            pass
    assert str(raised.value) == (
        f"worker 'loud': its Ray replicas did not start: {driver_only}: workers[0].tools[0]: "
        "cannot import 'shouting:shout': importing 'shouting' raised ModuleNotFoundError: "
        "no module named 'driver_only', which it imports (install the package that provides "
        "it, or put its directory on the import path)"
    )


BUILDS = """
from regiment.hierarchy import Worker
from regiment.models import ScriptedModel


def brain(request):
    return "done"


def build():
    return Worker(name="w", description="d", model=ScriptedModel(brain))
"""


async def test_a_build_in_code_the_nodes_cannot_load_fails_the_start(
    ray_session: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A build function of a module only this process has: pickled by reference, it
    cannot be unpickled on the node."""
    (tmp_path / "driver_builds.py").write_text(BUILDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "driver_builds", raising=False)
    builds = importlib.import_module("driver_builds")
    worker = dataclasses.replace(
        builds.build(), placement=Ray(build=functools.partial(builds.build), num_cpus=0)
    )
    team = Team(name="t", planner=Planner(model=ScriptedModel(builds.brain)), workers=[worker])
    with pytest.raises(ConfigError) as raised:
        async with team.start():
            pass
    assert str(raised.value) == (
        "worker 'w': its Ray replicas did not start: the workers' Ray(build=...) cannot be "
        "loaded on the Ray node (ModuleNotFoundError: No module named 'driver_builds'); make "
        "its modules importable there (installed, or on the Ray node's PYTHONPATH)"
    )
