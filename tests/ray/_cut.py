"""A team whose Ray-placed worker's model call is held by the test's stand-in Messages
API while a replan or the run's cancel cuts its step (``test_ray_cut_calls``); its
worker is built on the replicas from :func:`slow`, by this module's name."""

from __future__ import annotations

import dataclasses
import functools
import json

from regiment.hierarchy import Budget, Check, Planner, Ray, Team, Worker
from regiment.models import ModelRequest, ScriptedModel

from ..hierarchy.held_call import CLAUDE, FREE, USD, held_model, until_held
from ..models.standin import StandIn

__all__ = ("CLAUDE", "USD", "Desk", "slow")


def slow(base_url: str) -> Worker:
    """The Ray worker: its model is the Messages API at ``base_url`` (which holds it)."""
    return Worker(name="slow", description="holds", model=held_model(base_url))


class Desk:
    """v1: ``s1`` on the Ray worker and ``s2``, an in-process probe whose check fails once
    ``s1``'s call is held, so the planner replans (cutting ``s1``); v2: ``s3``; an answer."""

    def __init__(self, api: StandIn, *, probe: bool = True) -> None:
        self.api = api
        self.probe = probe  # else v1 is ``s1`` alone

    async def brain(self, request: ModelRequest) -> str:
        if request.role == "planner":
            steps = [{"id": "s1", "description": "hold", "worker": "slow"}]
            if self.probe:
                steps.append({"id": "s2", "description": "probe", "worker": "quick", "check": "no"})
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"id": "s3", "description": "wrap", "worker": "quick"}]})
        if request.role == "worker" and "probe" in request.messages[0].text:
            await self.held()
            return "the probe failed"
        return "done"

    async def held(self) -> None:
        """Until the stand-in holds ``s1``'s call (sent from its replica)."""
        await until_held(self.api, 90)

    def team(self, budget: Budget | None = None, step_timeout: float = 600.0) -> Team:
        """``budget``: ``Budget(usd=USD)`` unless given; ``step_timeout``: the Ray worker's."""
        build = functools.partial(slow, self.api.base_url)
        placement = Ray(build=build, num_cpus=0)
        placed = dataclasses.replace(build(), placement=placement, step_timeout=step_timeout)
        scripted = ScriptedModel(self.brain, price=FREE)
        return Team(
            name="desk",
            planner=Planner(model=scripted),
            workers=[placed, Worker(name="quick", description="answers", model=scripted)],
            checks={"no": Check(description="never passes", predicate=lambda r: False)},
            budget=Budget(usd=USD) if budget is None else budget,
        )
