"""Resume time of a 100-step run that was killed before its last step.

``.venv/bin/python bench/resume.py [--backend trio] [--steps 100]`` runs a
sequential plan of N steps (each: one tool call, then an answer; the scripted
model answers instantly) journaled to a temporary SQLite file, and "kills" it
at step N's first model call: it copies the file with SQLite's backup API
(only committed transactions, as a ``kill -9`` leaves it) and cancels the
live run. Then it resumes the copy and prints how long the resume took (N-1
steps replayed from the journal, step N live, synthesis), next to an
uninterrupted journaled run of the same plan.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from regiment import Planner, ScriptedModel, Team, Worker, tool
from regiment.hierarchy import RunStarted
from regiment.journal import SqliteJournal
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response

__all__ = ("main",)


@tool
def record(step: str) -> str:
    """Record that a step ran."""
    return f"recorded {step}"


def _team(steps: int, stop: anyio.Event | None, reached: anyio.Event | None) -> Team:
    plan = json.dumps(
        {
            "steps": [
                {"id": f"s{i}", "description": f"step {i}"}
                | ({"depends_on": [f"s{i - 1}"]} if i > 1 else {})
                for i in range(1, steps + 1)
            ]
        }
    )
    last = f"s{steps}"

    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return plan
        if request.role == "worker":
            found = re.search(r"Your step \((\w+)\)", request.messages[0].text)
            assert found is not None
            step = found.group(1)
            results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
            if results:
                return f"{step} done"
            if step == last and reached is not None and stop is not None:
                reached.set()
                await stop.wait()  # the "kill" happens here
            return tool_call_response("record", {"step": step})
        return "all done"

    model = ScriptedModel(brain)
    return Team(
        name="resume-bench",
        planner=Planner(model=model, max_steps=steps),
        workers=[Worker(name="w", description="does steps", model=model, tools=[record])],
        concurrency=1,
    )


async def _killed_run(steps: int, folder: Path) -> tuple[Path, str]:
    live, copy = folder / "live.db", folder / "killed.db"
    stop, reached = anyio.Event(), anyio.Event()
    run_ids: list[str] = []
    team = _team(steps, stop, reached)

    async def run() -> None:
        async with running.stream("do every step") as events:
            async for event in events:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    async with team.start(journal=live) as running, anyio.create_task_group() as tg:
        tg.start_soon(run)
        await reached.wait()
        _backup(live, copy)
        tg.cancel_scope.cancel()
    return copy, run_ids[0]


def _backup(live: Path, copy: Path) -> None:
    source, target = sqlite3.connect(live), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()


async def _measure(steps: int, repeats: int) -> tuple[float, float]:
    resumes: list[float] = []
    fulls: list[float] = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            copy, run_id = await _killed_run(steps, folder)
            # The dead owner's lease is still alive: a clock a lease's length ahead.
            journal = await SqliteJournal.open(copy, clock=lambda: time.time() + 60)
            try:
                async with _team(steps, None, None).start(journal=journal) as running:
                    start = time.perf_counter()
                    result = await running.resume(run_id)
                    resumes.append(time.perf_counter() - start)
                assert result.status == "completed", result
                assert len(result.committed) == steps
            finally:
                await journal.close()
            async with _team(steps, None, None).start(journal=folder / "full.db") as running:
                start = time.perf_counter()
                await running.run("do every step")
                fulls.append(time.perf_counter() - start)
    return statistics.median(resumes), statistics.median(fulls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    resume, full = anyio.run(_measure, args.steps, args.repeats, backend=args.backend)
    print(f"backend {args.backend}, {args.steps}-step sequential run, SQLite journal, median")
    print(f"  resume after a kill at the last step  {resume * 1e3:8.1f} ms")
    print(f"  the whole run, uninterrupted           {full * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
