"""How far behind the run's own service a follower on another service is, and how much
the other service reads the journal for its followers.

    .venv/bin/python bench/follow_elsewhere.py [JOURNAL] [--followers N]

Two services (``create_app`` under uvicorn, in this process) share one journal (a
new SQLite file, or ``JOURNAL``: a path or a ``postgresql://`` URL). A run of
``STEPS`` steps, one after another, each ``PAUSE`` s long, is posted to the first;
one follower reads its ``GET /runs/{id}/events`` from the first service (the run
is live there) and ``N`` (1 by default) from the second (the run is another process's
there: the second reads the journal every half second). Printed: how many numbered
events each got, how the second one's streams ended, and, per event both got, how much
later the second service's first follower had it than the first (median and largest), in
ms; then the second service's polls of the journal a second (calls of its journal's
``get_run`` and ``read``, counted by wrapping them on the journal object the bench opens
for it) from the moment every follower has had an event to the run's end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for examples.service

from examples.service.serving import serving
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import Journal, open_journal
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


async def follow(
    c: httpx.AsyncClient,
    url: str,
    got: dict[str, float],
    ends: list[str],
    first: Ticks | None = None,
) -> None:
    """Each numbered event's arrival time in ``got``; the last frame's ``event:`` in ``ends``
    (``first``: told the first event came)."""
    name, last = "", ""
    async with c.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("id:"):
                if not got and first is not None:
                    first.tick()
                got[line.removeprefix("id:").strip()] = time.perf_counter()
            elif line == "" and name:
                last, name = name, ""
    ends.append(last)


class Ticks:
    """Set ``all`` once ``tick`` has been called ``n`` times."""

    def __init__(self, n: int) -> None:
        self.left, self.all = n, anyio.Event()

    def tick(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.all.set()


READS = ("get_run", "read", "read_run", "list_runs", "pending_approvals")
"""The journal's read methods the service calls (``read_run``: a listing and the records, in
one snapshot)."""


def counting(journal: Journal, counts: Counter[str]) -> None:
    """Count each call of ``journal``'s read methods in ``counts`` (by name)."""
    for name in READS:
        method: Callable[..., Awaitable[Any]] = getattr(journal, name)

        async def counted(*args: Any, _name: str = name, _method: Any = method, **kw: Any) -> Any:
            counts[_name] += 1
            return await _method(*args, **kw)

        setattr(journal, name, counted)


async def main(spec: str, followers: int) -> None:
    counts: Counter[str] = Counter()
    journal = await open_journal(spec)
    counting(journal, counts)
    try:
        await _follow(spec, journal, followers, counts)
    finally:
        await journal.close()


async def _follow(spec: str, journal: Journal, followers: int, counts: Counter[str]) -> None:
    async with (
        serving(create_app(team(), journal=spec)) as one,
        serving(create_app(team(), journal=journal)) as two,
        httpx.AsyncClient(timeout=60) as c,
    ):
        run_id = (await c.post(f"{one}/runs", json={"goal": "do the parts"})).json()["run_id"]
        here: dict[str, float] = {}
        there: list[dict[str, float]] = [{} for _ in range(followers)]
        ends: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow, c, f"{one}/runs/{run_id}/events", here, [])
            firsts = Ticks(followers)
            for got in there:
                tg.start_soon(follow, c, f"{two}/runs/{run_id}/events", got, ends, firsts)
            await firsts.all.wait()  # counted from when every follower has had an event
            began, first = time.perf_counter(), Counter(counts)
        took, reads = time.perf_counter() - began, counts - first
    lags = [(there[0][n] - here[n]) * 1000 for n in there[0] if n in here]
    print(f"journal: {spec}")
    print(f"events, the run's own service:      {len(here)}")
    print(
        f"events, the other service:          {sorted({len(t) for t in there})} (its {followers} stream(s) ended with {sorted(set(ends))})"
    )
    if lags:
        print(f"the other service's lag, median:    {statistics.median(lags):.0f} ms")
        print(f"the other service's lag, largest:   {max(lags):.0f} ms")
    polls = reads["get_run"] + reads["read"]
    print(
        f"the other service's polls:         {polls} in {took:.2f} s, {polls / took:.1f}/s "
        f"(get_run {reads['get_run']}, read {reads['read']}; read_run {reads['read_run']}: "
        "a follower's first read, and the run's end)"
    )


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "journal", nargs="?", help="a path or a postgresql:// URL (default: a new SQLite file)"
    )
    parser.add_argument("--followers", type=int, default=1, help="followers on the other service")
    return parser.parse_args()


if __name__ == "__main__":
    args = _args()
    with tempfile.TemporaryDirectory() as directory:
        anyio.run(main, args.journal or str(Path(directory) / "runs.db"), args.followers)
