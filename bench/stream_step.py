"""What streaming adds to regiment's per-step cost, with an instant scripted model.

``.venv/bin/python bench/stream_step.py`` runs the per-step bench's 10-step
sequential plan twice on the same brain: once with every model call answered
by ``ScriptedModel.complete`` (no streaming), once through
``ScriptedModel.stream`` with a delta handler that collects each piece, as a
streaming engine would. Every worker reply is a 136-character sentence,
which the scripted model's default ``delta_size`` (32) hands out in 4 to 5
text deltas; the planner's JSON comes in 17. It prints the median µs per
step of each and the overhead of streaming (target ≤ 10%).
``--backend trio`` runs on trio. Wall-clock figures on a busy shared machine
move by ±20% between runs; ``--instructions`` counts CPU instructions per
step under valgrind's callgrind instead, which repeat exactly (a few minutes).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from typing import final

import anyio
import regiment_cases as rc
from bench_util import REPEATS, SEQ_RUNS, SEQ_STEPS

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import (
    Model,
    ModelRequest,
    ModelResponse,
    PartDelta,
    ScriptedModel,
    Usage,
    text_response,
)

__all__ = ("main", "per_step_us")

TARGET_OVERHEAD = 0.10
_USAGE = Usage(input_tokens=100, output_tokens=20)
_WORK = (
    "The step is done: the record was checked, the totals agree with the ledger, "
    "and nothing else needs to change before the next step starts."
)


@final
class Streamed:
    """A model whose every call streams, collecting the deltas as an engine would."""

    def __init__(self, inner: ScriptedModel) -> None:
        self._inner = inner
        self.deltas = 0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def provider(self) -> str:
        return self._inner.provider

    async def complete(self, request: ModelRequest) -> ModelResponse:
        pieces: list[PartDelta] = []

        async def collect(delta: PartDelta) -> None:
            pieces.append(delta)

        response = await self._inner.stream(request, collect)
        self.deltas += len(pieces)
        return response


def _brain(steps: int) -> ScriptedModel:
    planned = text_response(rc.plan_reply(steps, sequential=True), usage=_USAGE)
    worked = text_response(_WORK, usage=_USAGE)
    answered = text_response("answer", usage=_USAGE)

    def reply(request: ModelRequest) -> ModelResponse:
        match request.role:
            case "worker":
                return worked
            case "planner" | "replanner":
                return planned
            case _:
                return answered

    return ScriptedModel(reply, name="bench")


def _team(model: Model, steps: int) -> Team:
    worker = Worker(name="w", description="does any step", model=model, tools=[rc.noop])
    return Team(
        name="bench", planner=Planner(model=model, max_steps=max(steps, 10)), workers=[worker]
    )


def per_step_us(backend: str) -> tuple[float, float]:
    """Median µs per step of a ``SEQ_STEPS``-step run, (not streamed, streamed).

    The two are measured in turns, so a busy machine slows both alike.
    """
    brain = _brain(SEQ_STEPS)
    plain_team, streamed_team = _team(brain, SEQ_STEPS), _team(Streamed(brain), SEQ_STEPS)

    async def measure() -> tuple[float, float]:
        plain: list[float] = []
        streamed: list[float] = []
        for _ in range(REPEATS):
            plain.append(await rc.sequential_run_s(plain_team, SEQ_RUNS))
            streamed.append(await rc.sequential_run_s(streamed_team, SEQ_RUNS))
        return statistics.median(plain), statistics.median(streamed)

    plain_s, streamed_s = anyio.run(measure, backend=backend)
    return plain_s * 1e6 / SEQ_STEPS, streamed_s * 1e6 / SEQ_STEPS


def _run_child(mode: str, runs: int) -> None:
    brain = _brain(SEQ_STEPS)
    team = _team(Streamed(brain) if mode == "streamed" else brain, SEQ_STEPS)

    async def go() -> None:
        async with team.start() as running:
            for _ in range(3 + runs):  # three warm-up runs, as bench/instructions.py does
                result = await running.run("do the steps")
                assert result.status == "completed", result.status

    anyio.run(go)


def _instructions(mode: str, runs: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    done = subprocess.run(
        [*command, sys.executable, __file__, "--child", mode, str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total for {mode}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def instructions_per_step(mode: str, runs: int = 20) -> float:
    """Thousands of CPU instructions per step (callgrind), which repeat exactly."""
    extra = _instructions(mode, runs) - _instructions(mode, 0)
    return extra / (runs * SEQ_STEPS) / 1000


def main(argv: list[str]) -> None:
    """Measure both ways and print the overhead."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    parser.add_argument(
        "--instructions", action="store_true", help="count CPU instructions (valgrind)"
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _run_child(args.child[0], int(args.child[1]))
        return
    if args.instructions:
        plain_k = instructions_per_step("plain")
        streamed_k = instructions_per_step("streamed")
        overhead = streamed_k / plain_k - 1
        verdict = "met" if overhead <= TARGET_OVERHEAD else "MISSED"
        print(f"streaming overhead per step (asyncio, callgrind, {SEQ_STEPS}-step runs)")
        print(f"  not streamed  {plain_k:9.1f} k instructions per step")
        print(f"  streamed      {streamed_k:9.1f} k instructions per step")
        print(f"  overhead      {overhead:9.1%}   target ≤ {TARGET_OVERHEAD:.0%}: {verdict}")
        return
    plain, streamed = per_step_us(args.backend)
    overhead = streamed / plain - 1
    verdict = "met" if overhead <= TARGET_OVERHEAD else "MISSED"
    print(
        f"streaming overhead per step ({args.backend}, median of {REPEATS} x {SEQ_RUNS} runs each, in turns)"
    )
    print(f"  not streamed  {plain:9.1f} µs per step")
    print(f"  streamed      {streamed:9.1f} µs per step (worker replies in 4-5 text deltas)")
    print(f"  overhead      {overhead:9.1%}   target ≤ {TARGET_OVERHEAD:.0%}: {verdict}")


if __name__ == "__main__":
    main(sys.argv[1:])
