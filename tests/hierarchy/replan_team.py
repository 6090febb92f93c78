"""A team whose first plan's probe step fails its check, so the planner replans."""

from __future__ import annotations

from collections.abc import Sequence

from regiment.hierarchy import Check, Planner, StepReport, Team, Worker
from regiment.models import ScriptedModel
from regiment.telemetry import Telemetry
from regiment.tools import Tool

from .brains import Brain, plan_json

__all__ = ("PROBE", "RECOVER", "replan_team")

PROBE = {"id": "s1", "description": "probe", "check": "fails"}
"""A step whose check never passes: its report makes the planner replan."""
RECOVER = plan_json({"description": "recover", "depends_on": ["s1"]})
"""The replan: one step after the kept probe."""


def _never_ok(report: StepReport) -> bool:
    return False


def replan_team(
    brain: Brain,
    *,
    worker: str = "w",
    telemetry: Telemetry | None = None,
    tools: Sequence[Tool[..., object]] = (),
) -> Team:
    """One planner and one worker (with ``tools``) on ``brain``; the check ``fails``
    never passes."""
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name=worker, description="does things", model=model, tools=tools)],
        checks={"fails": Check(description="never passes", predicate=_never_ok)},
        telemetry=telemetry,
    )
