"""Teams for the service tests: the service example's support team, and a tool
that waits until cancelled and says so."""

from __future__ import annotations

import anyio

from examples.service.team import STATUS, build_team, support_brain
from regiment import RunContext
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.tools import tool

__all__ = ("Stuck", "deps_team", "stuck_team", "support_team")


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


def deps_team() -> Team:
    """``order_status`` that answers for the user named in the run's deps."""

    @tool
    def order_status(order_id: str, ctx: RunContext[dict[str, str]]) -> str:
        """Where an order is, as seen by the asking user."""
        return f"{STATUS.get(order_id, 'unknown order')} (asked by {ctx.deps['user_id']})"

    model = ScriptedModel(support_brain)
    worker = Worker(name="support", description="Orders.", model=model, tools=[order_status])
    return Team(name="support", planner=Planner(model=model), workers=[worker])
