"""A team whose one worker holds an order on a Ray cluster of the test's own, and
the driver process that runs it there (``python -m tests.ray._cluster_lost ADDRESS
JOURNAL LEDGER``): the test stops that cluster under the step, as ``ray stop`` on
its head would, and resumes the run in its own process.

The ``hold`` tool appends to a ledger file the key it was asked under, and the
effect once per key; on a Ray replica it then waits (for the cluster to go away),
in the test's process it answers.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from regiment.hierarchy import Planner, Ray, RunFailed, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.models import tool_call_response as call
from regiment.tools import RunContext, tool

from ._ray_team import plan_text

__all__ = ("ledger", "holding_team")


def ledger(path: str | Path) -> list[dict[str, Any]]:
    """The ledger's lines: ``{"asked": key, "pid": ...}`` and ``{"performed": key}``."""
    file = Path(path)
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


def _write(path: str, line: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")
        file.flush()


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(
            plan_text({"id": "s1", "description": "Hold 88213", "worker": "holder"})
        )
    if request.role == "synthesizer":
        return text_response("order 88213 is held")
    last = request.messages[-1]
    if last.role == "user" and any(getattr(p, "call_id", None) for p in last.parts):
        return text_response(f"held: {getattr(last.parts[0], 'content', '')}")
    return call("hold", {"order_id": "88213"})


def holder(path: str) -> Worker:
    """The ``holder`` worker, its ``hold`` calls written to the ledger at ``path``."""

    @tool(idempotency_key=("order_id",))
    async def hold(ctx: RunContext[None], order_id: str) -> str:
        """Hold the order."""
        import ray

        key = ctx.idempotency_key
        _write(path, {"asked": key, "pid": os.getpid(), "on_ray": ray.is_initialized()})
        if any(line.get("performed") == key for line in ledger(path)):
            return "already held"
        _write(path, {"performed": key})
        if ray.is_initialized():  # on the replica: the test stops the cluster meanwhile
            await anyio.sleep_forever()
        return "held"

    return Worker(
        name="holder", description="Holds orders.", model=ScriptedModel(_brain), tools=[hold]
    )


def holding_team(path: str, address: str | None = None) -> Team:
    """The team; ``address``: its worker on the Ray cluster there, else in-process."""
    worker = holder(path)
    if address is not None:
        build = functools.partial(holder, path)
        worker = dataclasses.replace(
            worker, placement=Ray(build=build, address=address, num_cpus=0)
        )
    return Team(name="holding", planner=Planner(model=ScriptedModel(_brain)), workers=[worker])


async def _drive(address: str, journal: str, path: str) -> None:
    """Run the goal on the cluster; print its events' types and its last event."""
    team = holding_team(path, address)
    async with team.start(journal=journal) as running, running.stream("hold 88213") as events:
        seen = [event async for event in events]
    last = seen[-1]
    assert isinstance(last, RunFailed), last
    print(json.dumps({
        "events": [type(e).__name__ for e in seen],
        "run_id": last.run_id,
        "error_type": last.error_type,
        "message": last.message,
    }), flush=True)  # fmt: skip


if __name__ == "__main__":  # the team by import path: a replica imports it (no pickled copy)
    from tests.ray import _cluster_lost

    logging.basicConfig(level=logging.WARNING)  # as `regiment run` shows its warnings
    address, journal, path = sys.argv[1:4]
    anyio.run(_cluster_lost._drive, address, journal, path)
