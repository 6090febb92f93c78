"""A planner handler that raised in a task not the planner's: the planner fails in its own."""

from __future__ import annotations

from regiment.actors import ActorContext
from regiment.hierarchy.run._logs import turn_failed_late
from regiment.hierarchy.run._messages import PlannerMessage

__all__ = ("fail_in_own_task", "reraise")


def fail_in_own_task(
    ctx: ActorContext[PlannerMessage, None], handling: str, exc: Exception
) -> None:
    """A handler of the planner's raised ``exc`` in a task not the planner's (a turn
    taken there): the planner fails in a task of its own, never in that one."""
    try:
        ctx.start_soon(reraise, exc)
    except RuntimeError:
        # Its task group has closed: the run ended and its planner stopped while
        # the turn still ran (a journal write, say). Nothing is left to fail;
        # what the run's caller did not get is logged, not lost.
        turn_failed_late(ctx.name, handling, exc)


async def reraise(exc: Exception) -> None:
    raise exc
