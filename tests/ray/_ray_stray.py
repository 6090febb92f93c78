"""A worker for the Ray tests whose tool, or the team's prompts, raise asyncio's
``CancelledError`` on their own (nothing cancelled them). Module-level, so a replica
imports it as ``tests.ray._ray_stray`` and the prompts pickle by reference."""

from __future__ import annotations

import asyncio
import dataclasses

from regiment.hierarchy import Budget, Planner, PlanStep, Prompts, Ray, StepContext, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import tool

from ..hierarchy.brains import Brain, plan_json

__all__ = ("CarelessPrompts", "TonelessPrompts", "stray_team")


@tool
async def careless(n: int) -> int:
    """Gives up the way a careless library does, when ``n`` is 1."""
    if n == 1:
        raise asyncio.CancelledError
    return n


@tool
def careless_sync(n: int) -> int:
    """The same, in a sync body (run in a thread of the replica)."""
    if n == 1:
        raise asyncio.CancelledError
    return n


class CarelessPrompts(Prompts):
    """Prompts whose request for a step described "bad ..." gives up the same way."""

    def step_request(self, *, step: PlanStep, context: StepContext) -> str:
        if step.description.startswith("bad"):
            raise asyncio.CancelledError
        return super().step_request(step=step, context=context)


class TonelessPrompts(Prompts):
    """Prompts whose worker system prompt needs a setting nobody gave."""

    def worker_system(self, *, worker: str, description: str, system_prompt: str) -> str:
        raise KeyError("tone")


async def _work(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if results:
        return f"the tool said: {results[0].content}"
    name = "careless_sync" if "sync" in description else "careless"
    return tool_call_response(name, {"n": 1 if description.startswith("bad") else 2})


def _worker() -> Worker:
    model = ScriptedModel(Brain([], work=_work))
    return Worker(name="w", description="calls", model=model, tools=[careless, careless_sync])


def stray_team(*descriptions: str, prompts: Prompts | None = None) -> Team:
    """One worker on a Ray replica, given a one-step plan per run, one of ``descriptions``
    each; the planner and synthesizer run here."""
    worker = dataclasses.replace(_worker(), placement=Ray(build=_worker))
    plans = [plan_json({"description": text}) for text in descriptions]
    return Team(
        name="t",
        planner=Planner(model=ScriptedModel(Brain(plans)), prompts=prompts or Prompts()),
        workers=[worker],
        budget=Budget(replans=0),
    )
