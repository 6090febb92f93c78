"""How far behind the run's own service a follower on another service is.

    .venv/bin/python bench/follow_elsewhere.py [JOURNAL]

Two services (``create_app`` under uvicorn, in this process) share one journal (a
new SQLite file, or ``JOURNAL``: a path or a ``postgresql://`` URL). A run of
``STEPS`` steps, one after another, each ``PAUSE`` s long, is posted to the first;
one follower reads its ``GET /runs/{id}/events`` from the first service (the run
is live there) and one from the second (the run is another process's there: it
reads the journal every half second). Printed: how many numbered events each got,
how the second one's stream ended, and, per event both got, how much later the
second follower had it than the first (median and largest), in ms.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for examples.service

from examples.service.serving import serving
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.serve import create_app

STEPS = 8
PAUSE = 0.3


async def brain(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        steps = [
            {"id": f"s{i}", "description": f"part {i}"}
            | ({"depends_on": [f"s{i - 1}"]} if i else {})
            for i in range(STEPS)
        ]
        return text_response(json.dumps({"steps": steps}))
    if request.role == "worker":
        await anyio.sleep(PAUSE)
    return text_response("done")


def team() -> Team:
    model = ScriptedModel(brain)
    worker = Worker(name="clerk", description="Does parts.", model=model)
    return Team(name="parts", planner=Planner(model=model), workers=[worker])


async def follow(c: httpx.AsyncClient, url: str, got: dict[str, float], ends: list[str]) -> None:
    """Each numbered event's arrival time in ``got``; the last frame's ``event:`` in ``ends``."""
    name, last = "", ""
    async with c.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("id:"):
                got[line.removeprefix("id:").strip()] = time.perf_counter()
            elif line == "" and name:
                last, name = name, ""
    ends.append(last)


async def main(journal: str) -> None:
    async with (
        serving(create_app(team(), journal=journal)) as one,
        serving(create_app(team(), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json={"goal": "do the parts"})).json()["run_id"]
        here: dict[str, float] = {}
        there: dict[str, float] = {}
        ends: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow, c, f"{one}/runs/{run_id}/events", here, [])
            tg.start_soon(follow, c, f"{two}/runs/{run_id}/events", there, ends)
    lags = [(there[n] - here[n]) * 1000 for n in there if n in here]
    print(f"journal: {journal}")
    print(f"events, the run's own service:      {len(here)}")
    print(f"events, the other service:          {len(there)} (its stream ended with {ends[0]})")
    if lags:
        print(f"the other service's lag, median:    {statistics.median(lags):.0f} ms")
        print(f"the other service's lag, largest:   {max(lags):.0f} ms")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else str(Path(directory) / "runs.db"))
