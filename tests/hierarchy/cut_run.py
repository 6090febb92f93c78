"""What the cut-call tests on scripted models share: one-step teams' brain (``brain``),
a model call held until the run's cancel cuts it (``held_until_cut``), and a run
cancelled once an awaited condition holds (``cancelled_once``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio

from regiment.hierarchy import RunCompleted, RunResult, Team
from regiment.models import ModelRequest, Price

__all__ = ("MAX_TOKENS", "PRICE", "brain", "cancelled_once", "held_until_cut")

PRICE = Price(input=1.0, output=1.0)
MAX_TOKENS = ModelRequest(messages=()).max_tokens  # the judge's request holds no other


def brain(request: ModelRequest) -> str:
    """A plan of one step ``s1`` for the planner; "drafted" for any other role."""
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "draft"}]})
    return "drafted"


def held_until_cut() -> tuple[anyio.Event, Callable[[ModelRequest], Awaitable[str]]]:
    """An Event set when the call starts, and a scripted reply held until the run's cancel
    cuts it (it awaits an Event it never gets)."""
    started, never = anyio.Event(), anyio.Event()

    async def held(request: ModelRequest) -> str:
        started.set()
        await never.wait()  # until the run's cancel cuts it
        return "fine"

    return started, held


async def cancelled_once(team: Team, until: Callable[[], Awaitable[object]]) -> RunResult:
    """Runs ``team`` on "draft", leaves its event stream (which cancels the run) once
    ``until()`` returns, and returns the cancelled run's result."""
    async with team.start() as running:
        async with running.stream("draft") as events:
            async for _ in events:
                await until()
                break  # leaving the block cancels the run
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    return ending.result
