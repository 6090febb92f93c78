"""Teams for the service tests: the service example's support team, and a tool
that waits until cancelled and says so."""

from __future__ import annotations

import anyio

from examples.service.team import build_team, support_brain
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.tools import tool

__all__ = ("Stuck", "stuck_team", "support_team")


def support_team() -> Team:
    return build_team(ScriptedModel(support_brain))


class Stuck:
    """A ``warehouse_scan`` that blocks until cancelled, and records both."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()


def stuck_team(stuck: Stuck) -> Team:
    @tool
    async def warehouse_scan(order_id: str) -> str:
        """Scan the warehouse shelves for an order."""
        stuck.started.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            stuck.cancelled.set()
            raise
        return "unreachable"

    model = ScriptedModel(support_brain)
    worker = Worker(name="support", description="Orders.", model=model, tools=[warehouse_scan])
    return Team(name="support", planner=Planner(model=model), workers=[worker])
