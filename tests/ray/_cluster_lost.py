"""Teams whose one worker holds an order on a Ray cluster of the test's own, and the
driver processes that run them there: ``regiment run`` of a team file (``team_file``)
and ``python -m tests.ray._cluster_lost ADDRESS JOURNAL`` for a nested team (a
``TeamWorker`` whose child team's worker is on Ray). The test stops that cluster under
both steps, as ``ray stop`` on its head would, and resumes the runs in its own process.

The ``hold`` tool appends to a ledger file (``REGIMENT_TEST_LEDGER``, set on the
cluster's processes and the drivers alike) the order and key it was asked under, and
the effect once per key; on a Ray replica it then waits (for the cluster to go away),
in the test's process it answers.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from regiment.hierarchy import Planner, Ray, Team, TeamWorker, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.models import tool_call_response as call
from regiment.tools import RunContext, tool

from ._ray_team import plan_text

__all__ = ("LEDGER", "brain", "front_team", "hold", "ledger", "team_file")

LEDGER = "REGIMENT_TEST_LEDGER"  # the environment variable naming the ledger file
HERE = "REGIMENT_TEST_IN_PROCESS"  # set in the test's process: its `hold` answers
FLAT, NESTED = "88213", "88214"  # the order the team file's run holds, and the nested one's


def ledger(path: str | Path) -> list[dict[str, Any]]:
    """The ledger's lines: ``{"asked": key, "order": ..., "pid": ..., "on_ray": ...}``
    and ``{"performed": key}``."""
    file = Path(path)
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


def _write(line: dict[str, Any]) -> None:
    with open(os.environ[LEDGER], "a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")
        file.flush()


def _order(request: ModelRequest) -> str:
    """The order the goal (or the step) names."""
    text = request.system + msgspec.json.encode(request.messages).decode()
    return NESTED if NESTED in text else FLAT


def _plan(request: ModelRequest, worker: str) -> str:
    return plan_text({"id": "s1", "description": f"Hold {_order(request)}", "worker": worker})


def brain(request: ModelRequest) -> ModelResponse:
    """The holding team's every role: a plan of one step for ``holder``, its ``hold``."""
    if request.role in ("planner", "replanner"):
        return text_response(_plan(request, "holder"))
    if request.role == "synthesizer":
        return text_response(f"order {_order(request)} is held")
    last = request.messages[-1]
    if last.role == "user" and any(getattr(p, "call_id", None) for p in last.parts):
        return text_response(f"held: {getattr(last.parts[0], 'content', '')}")
    return call("hold", {"order_id": _order(request)})


def _front_brain(request: ModelRequest) -> ModelResponse:
    """The front team's planner: one step for its nested ``desk`` team."""
    if request.role == "synthesizer":
        return text_response(f"order {_order(request)} is held, says the desk")
    return text_response(_plan(request, "desk"))


@tool(idempotency_key=("order_id",))
async def hold(ctx: RunContext[None], order_id: str) -> str:
    """Hold the order."""
    import ray

    key = ctx.idempotency_key
    on_ray = ray.is_initialized()
    _write({"asked": key, "order": order_id, "pid": os.getpid(), "on_ray": on_ray})
    if any(line.get("performed") == key for line in ledger(os.environ[LEDGER])):
        return "already held"
    _write({"performed": key})
    if on_ray and HERE not in os.environ:  # on the replica: the test stops the cluster
        await anyio.sleep_forever()
    return "held"


def team_file(directory: Path) -> Path:
    """The holding team as a file (its worker in-process unless ``--workers ray``)."""
    path = directory / "holding.toml"
    path.write_text(
        'name = "holding"\nmodel = "scripted"\nbrain = "tests.ray._cluster_lost:brain"\n\n'
        '[[workers]]\nname = "holder"\ndescription = "Holds orders."\n'
        'tools = ["tests.ray._cluster_lost:hold"]\n'
    )
    return path


def front_team(address: str | None = None) -> Team:
    """A team whose one worker is the holding team; ``address``: the holding team's
    worker on the Ray cluster there, else in-process."""
    holder = _holder()
    if address is not None:
        placement = Ray(build="tests.ray._cluster_lost:_holder", address=address, num_cpus=0)
        holder = dataclasses.replace(holder, placement=placement)
    holding = Team(name="holding", planner=Planner(model=ScriptedModel(brain)), workers=[holder])
    desk = TeamWorker(name="desk", description="Holds orders, as a team.", team=holding)
    return Team(name="front", planner=Planner(model=ScriptedModel(_front_brain)), workers=[desk])


def _holder() -> Worker:
    return Worker(
        name="holder", description="Holds orders.", model=ScriptedModel(brain), tools=[hold]
    )


async def _drive(address: str, journal: str) -> None:
    """Serve the front team (``create_app``, under uvicorn) and run the nested goal on
    the cluster through it; print the run as the service lists it once it has ended
    (its events' types, its error, its status), and whether this process is still
    joined to Ray once the run has ended."""
    import httpx2 as httpx
    import ray

    from examples.service.serving import serving
    from regiment.serve import create_app
    from tests.serve.sse import run_events

    app = create_app(front_team(address), journal=journal)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=180) as client:
        posted = await client.post("/runs?wait=true", json={"goal": f"hold {NESTED}"})
        assert posted.status_code == 200, posted.text
        view = posted.json()
        frames = await run_events(client, view["run_id"])
        await anyio.to_thread.run_sync(_left, ray)  # it disconnects in a thread of its own
        listed = (await client.get(f"/runs/{view['run_id']}")).json()
    error_type, _, message = view["error"].partition(": ")
    print(json.dumps({
        "events": [frame.event for frame in frames],
        "run_id": view["run_id"],
        "error_type": error_type,
        "message": message,
        "status": listed["status"],
        "joined": ray.is_initialized(),
    }), flush=True)  # fmt: skip


def _left(ray: Any) -> None:
    deadline = time.monotonic() + 60
    while ray.is_initialized() and time.monotonic() < deadline:
        time.sleep(0.2)


if __name__ == "__main__":  # the team by import path: a replica imports it (no pickled copy)
    from tests.ray import _cluster_lost

    logging.basicConfig(level=logging.WARNING)  # as `regiment run` shows its warnings
    address, journal = sys.argv[1:3]
    anyio.run(_cluster_lost._drive, address, journal)
