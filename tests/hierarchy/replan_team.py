"""A team whose first plan's probe step fails its check, so the planner replans."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from regiment.hierarchy import Check, Planner, StepReport, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart
from regiment.telemetry import Telemetry
from regiment.tools import Tool

from .brains import Brain, WorkFn, plan_json

__all__ = ("PROBE", "RECOVER", "probe_after_slow", "replan_team")

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


def probe_after_slow(work: WorkFn) -> WorkFn:
    """``work``, but the probe answers only once the ``slow draft`` step's model call
    has begun: the replan then cuts a call on the wire. (A replan cuts the steps of the
    old version at once: one that had not yet called its model never calls it.)"""
    started = anyio.Event()

    async def in_order(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "slow draft":
            started.set()
        elif description == "probe":
            await started.wait()
        return await work(description, results, request)

    return in_order
