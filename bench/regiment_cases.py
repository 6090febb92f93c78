"""Regiment's side of the benchmark rows: teams of a fixed shape and timed runs.

Every model here is a ``ScriptedModel`` whose replies carry a usage and a model
name, so the scripted model adds nothing of its own (no token estimate); it
answers instantly unless a ``delay`` is given. The worker's tool is a no-op.
Each function returns seconds (or a dict of figures) for one measurement;
``bench_util`` takes medians over repeats.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import assert_never

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from regiment import (
    ModelRequest,
    ModelResponse,
    Planner,
    RunningTeam,
    ScriptedModel,
    Team,
    Telemetry,
    Worker,
    text_response,
    tool,
    tool_call_response,
)
from regiment.actors import Actor, ActorRef, open_actor_system
from regiment.hierarchy import (
    AssignStep,
    PlanStep,
    Prompts,
    StepContext,
    StepReport,
    WorkerActor,
    WorkerMessage,
)
from regiment.models import Model, ToolResultPart, Usage

__all__ = (
    "CountingExporter",
    "all_at_once",
    "noop",
    "one_tool_worker_run_s",
    "overlap_wall_s",
    "plan_reply",
    "scale_runs",
    "sequential_run_s",
    "sequential_team",
    "tracing",
)

_USAGE = Usage(input_tokens=10, output_tokens=5)
_MODEL = "bench"


@tool
async def noop() -> str:
    """Do nothing and say so."""
    return "ok"


def plan_reply(steps: int, *, sequential: bool) -> str:
    """The planner's JSON for ``steps`` steps, each depending on the one before (or none)."""
    return json.dumps(
        {
            "steps": [
                {
                    "id": f"s{i}",
                    "description": f"step {i}",
                    "depends_on": [f"s{i - 1}"] if sequential and i > 1 else [],
                }
                for i in range(1, steps + 1)
            ]
        }
    )


def _brain(
    plan: str, delay: float, on_call: Callable[[], object] | None = None
) -> Callable[[ModelRequest], Awaitable[ModelResponse]]:
    planned = text_response(plan, usage=_USAGE, model=_MODEL)
    worked = text_response("done", usage=_USAGE, model=_MODEL)
    answered = text_response("answer", usage=_USAGE, model=_MODEL)

    async def reply(request: ModelRequest) -> ModelResponse:
        if on_call is not None:
            on_call()
        if request.role == "worker":
            if delay:
                await anyio.sleep(delay)
            return worked
        if request.role in ("planner", "replanner"):
            return planned
        return answered

    return reply


class _Unrecorded:
    """A model that answers from a brain at once (after its delay) and keeps nothing.

    ``ScriptedModel`` records every request for a test to read afterwards; over
    row 5's ~28,000 model calls that is ~30,000 objects a real model would not
    keep, which the garbage collector walks again and again (a full collection in
    every burst) and which grow the peak RSS with each burst.
    """

    def __init__(self, brain: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> None:
        self._brain = brain

    @property
    def name(self) -> str:
        return _MODEL

    @property
    def provider(self) -> str:
        return "scripted"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._brain(request)


def sequential_team(
    steps: int,
    *,
    sequential: bool = True,
    delay: float = 0.0,
    concurrency: int = 100,
    telemetry: Telemetry | None = None,
    recorded: bool = True,
    on_call: Callable[[], object] | None = None,
) -> Team:
    """One planner and one worker; the plan has ``steps`` steps; each worker step is one model call.

    ``recorded=False``: the model keeps no record of its requests (see ``_Unrecorded``).
    ``on_call``: called at each model call (the plan, each step's, the synthesis).
    """
    brain = _brain(plan_reply(steps, sequential=sequential), delay, on_call)
    model: Model = ScriptedModel(brain, name=_MODEL) if recorded else _Unrecorded(brain)
    worker = Worker(
        name="w",
        description="does any step",
        model=model,
        tools=[noop],
        max_iterations=4,
        max_concurrent_steps=max(steps, concurrency),
    )
    return Team(
        name="bench",
        planner=Planner(model=model, max_steps=max(steps, 10)),
        workers=[worker],
        concurrency=concurrency,
        telemetry=telemetry,
    )


async def sequential_run_s(team: Team, runs: int, *, streamed: bool = False) -> float:
    """Seconds per run, over ``runs`` back-to-back runs on one started team.

    ``streamed``: each run is read through ``stream(goal)`` instead, so every model
    call streams its text and every event reaches this reader."""
    async with team.start() as running:
        await running.run("warm up")
        start = time.perf_counter()
        for _ in range(runs):
            if streamed:
                async with running.stream("do the steps") as events:
                    async for event in events:
                        last = event
                assert type(last).__name__ == "RunCompleted", last
            else:
                result = await running.run("do the steps")
                assert result.status == "completed", result.status
        return (time.perf_counter() - start) / runs


async def overlap_wall_s(steps: int, delay: float) -> float:
    """Wall seconds of one run whose plan has ``steps`` independent steps of ``delay`` s each.

    The whole run is timed (plan call, dispatch, the steps, commits, synthesis), on a
    team that has done one run already; planner and synthesizer answer instantly.
    """
    team = sequential_team(steps, sequential=False, delay=delay, concurrency=steps)
    async with team.start() as running:
        await running.run("warm up")
        start = time.perf_counter()
        result = await running.run("do the steps at once")
        wall = time.perf_counter() - start
    assert result.status == "completed", result.status
    assert len(result.steps) == steps, len(result.steps)
    return wall


class CountingExporter(SpanExporter):
    """Counts the spans (and their attributes) it is given and keeps none, so a
    traced bench does not also measure a growing list of finished spans."""

    def __init__(self) -> None:
        self.spans = 0
        self.attributes = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        self.attributes += sum(len(span.attributes or {}) for span in spans)
        return SpanExportResult.SUCCESS

    def attributes_per_span(self) -> float:
        return self.attributes / max(self.spans, 1)


def tracing(*, exact: bool = False) -> tuple[Telemetry, CountingExporter, TracerProvider]:
    """Tracing on: a batch span processor exporting to a counting sink; ``exact``: a simple
    one, exporting each span as it ends, in the thread that ends it. An instruction count
    wants that: the batch processor's export thread wakes on a timer, so how often it
    runs within a count (and what it costs there) moves by ~100k a step (tel22)."""
    exporter = CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor((SimpleSpanProcessor if exact else BatchSpanProcessor)(exporter))
    return Telemetry(provider), exporter, provider


async def scale_runs(
    concurrent: int,
    steps: int,
    telemetry: Telemetry | None = None,
    *,
    repeats: int = 1,
    spawns: list[tuple[float, float]] | None = None,
    per_turn: int | None = None,
    watch: Callable[[], AbstractAsyncContextManager[object]] = nullcontext,
) -> list[float]:
    """Seconds for ``concurrent`` runs of a ``steps``-step sequential plan, all at once,
    ``repeats`` times on one started team (after a warm-up run); ``spawns`` and
    ``per_turn`` as for :func:`all_at_once`. ``watch()`` is entered around the
    bursts alone (a loop-lag probe), not the team's start and warm-up."""
    team = sequential_team(steps, concurrency=8, telemetry=telemetry, recorded=False)
    async with team.start() as running:
        await running.run("warm up")
        async with watch():
            return [
                await all_at_once(running, concurrent, spawns, per_turn) for _ in range(repeats)
            ]


async def all_at_once(
    running: RunningTeam,
    concurrent: int,
    spawns: list[tuple[float, float]] | None = None,
    per_turn: int | None = None,
) -> float:
    """Seconds for ``concurrent`` runs of ``running``, all started at once.

    ``spawns`` gets when the bench's own loop of ``start_soon`` calls began and ended,
    on ``time.perf_counter`` (one turn, before any run has begun): a loop-lag probe
    running beside the burst cannot see a lag below it, whatever regiment does.
    ``per_turn``: start that many callers per event-loop turn instead of all in
    one (as a service's requests arrive, over many reads of its sockets).
    """

    async def one() -> None:
        result = await running.run("do the steps")
        assert result.status == "completed", result.status

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for index in range(concurrent):
            tg.start_soon(one)
            if per_turn is not None and (index + 1) % per_turn == 0:
                await anyio.lowlevel.checkpoint()
        if spawns is not None:
            spawns.append((start, time.perf_counter()))
    return time.perf_counter() - start


def _tool_brain() -> Callable[[ModelRequest], ModelResponse]:
    call = tool_call_response("noop", {}, call_id="c1", usage=_USAGE, model=_MODEL)
    answer = text_response("done", usage=_USAGE, model=_MODEL)

    def reply(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if any(isinstance(p, ToolResultPart) for p in last.parts):
            return answer
        return call

    return reply


class _Driver(Actor[StepReport | AssignStep, None]):
    """Stands in for a run's planner: assigns a step to the worker, hears its report."""

    def __init__(self, worker: ActorRef[WorkerMessage, None]) -> None:
        self.worker = worker
        self.reports: list[StepReport] = []
        self.got = anyio.Event()

    async def receive(self, message: StepReport | AssignStep) -> None:
        match message:
            case AssignStep():
                await self.worker.send(message)
            case StepReport():
                self.reports.append(message)
                self.got.set()
            case _:
                assert_never(message)


async def one_tool_worker_run_s(
    runs: int, telemetry: Telemetry | None = None, warmed: Callable[[], object] | None = None
) -> float:
    """Seconds per step of a lone worker actor: model -> no-op tool -> model, report back.

    The step is assigned by a driver actor (as a run's planner would) and the time
    runs until its ``StepReport`` has arrived, so it covers the mailbox hop both ways.
    ``warmed`` is called after the first (untimed) step; ``runs`` may be 0.
    """
    worker = Worker(
        name="w",
        description="calls its tool once",
        model=ScriptedModel(_tool_brain(), name=_MODEL),
        tools=[noop],
        max_iterations=4,
    )
    tel = telemetry or Telemetry()
    step = PlanStep(id="s1", description="call the tool once")
    context = StepContext(goal="bench", plan_outline="s1: call the tool once")
    async with open_actor_system() as system:
        ref = await system.spawn(functools.partial(WorkerActor, worker, Prompts(), tel), name="w")
        driver = _Driver(ref)
        driver_ref = await system.spawn(lambda: driver, name="driver")

        async def one(index: int) -> None:
            driver.got = anyio.Event()
            driver_ref.send_nowait(
                AssignStep(run_id=f"r{index}", plan_version=1, step=step, context=context)
            )
            await driver.got.wait()

        await one(0)
        if warmed is not None:
            warmed()
        start = time.perf_counter()
        for i in range(runs):
            await one(i + 1)
        elapsed = (time.perf_counter() - start) / max(runs, 1)
    last = driver.reports[-1]
    assert last.status == "done", last
    assert len(last.tool_outcomes) == 1, last
    assert len(driver.reports) == runs + 1
    return elapsed
