"""A worker's steps run on reused runner tasks: the concurrency limit holds,
no context leaks from one step to the next, queued steps cancel cleanly."""

from __future__ import annotations

import contextvars

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import RunCancelled
from regiment.hierarchy import Planner, RunResult, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart
from regiment.telemetry import SpanCollector, Telemetry, semconv

from .brains import Brain, Hang, plan_json
from .tasks import busy_tasks, idle_runners

pytestmark = pytest.mark.anyio

_FOUR = plan_json(*({"description": f"task {i}"} for i in range(1, 5)))
_WARM_UP = plan_json({"description": "warm-up"})

# A variable a step's own code sets, as user code in a model client or tool might.
_seen_by_step: contextvars.ContextVar[str] = contextvars.ContextVar(
    "_seen_by_step", default="unset"
)


def _team(brain: Brain, *, max_steps: int = 2, telemetry: Telemetry | None = None) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model, max_concurrent_steps=max_steps)],
        concurrency=8,  # above the worker's limit, so only the worker's limit holds steps back
        telemetry=telemetry,
    )


class Gated:
    """A worker script: each step waits for a permit, counting steps in their model call."""

    def __init__(self) -> None:
        self.permits = anyio.Semaphore(0)
        self.in_flight = 0
        self.peak = 0
        self.started: list[str] = []

    async def __call__(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        self.started.append(description)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.permits.acquire()
        finally:
            self.in_flight -= 1
        return f"did: {description}"


async def test_a_worker_never_runs_more_steps_at_once_than_its_limit() -> None:
    gated = Gated()
    team = _team(Brain([_FOUR], work=gated), max_steps=2)
    results: list[RunResult] = []
    async with team.start() as running, anyio.create_task_group() as tg:

        async def run() -> None:
            results.append(await running.run("four things"))

        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert gated.in_flight == 2  # two steps wait for a runner
        assert len(gated.started) == 2
        for released in range(1, 5):
            gated.permits.release()
            await anyio.wait_all_tasks_blocked()
            assert gated.in_flight == min(2, 4 - released)
    assert gated.peak == 2
    assert sorted(gated.started) == ["task 1", "task 2", "task 3", "task 4"]
    (result,) = results
    assert sorted(result.committed) == ["s1", "s2", "s3", "s4"]
    assert result.status == "completed"


async def test_one_worker_runs_four_steps_one_at_a_time_with_limit_one() -> None:
    gated = Gated()
    team = _team(Brain([_FOUR], work=gated), max_steps=1)
    async with team.start() as running, anyio.create_task_group() as tg:
        tg.start_soon(running.run, "four things")
        for _ in range(4):
            await anyio.wait_all_tasks_blocked()
            assert gated.in_flight == 1
            gated.permits.release()
    assert gated.peak == 1
    assert gated.started == ["task 1", "task 2", "task 3", "task 4"]  # queued in plan order


async def test_a_context_variable_set_by_a_step_does_not_reach_the_next_step() -> None:
    seen: dict[str, str] = {}

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        seen[description] = _seen_by_step.get()
        _seen_by_step.set(f"left by {description}")
        return f"did: {description}"

    plan = plan_json(
        {"id": "s1", "description": "first"},
        {"id": "s2", "description": "second", "depends_on": ["s1"]},
        {"id": "s3", "description": "third", "depends_on": ["s2"]},
    )
    for max_steps in (1, 2):
        seen.clear()
        result = await _team(Brain([plan], work=work), max_steps=max_steps).run("in order")
        assert result.committed == ("s1", "s2", "s3")
        assert seen == {"first": "unset", "second": "unset", "third": "unset"}
    assert _seen_by_step.get() == "unset"  # nor does it reach the caller


async def test_a_context_variable_does_not_leak_between_runs_on_a_started_team() -> None:
    seen: list[str] = []

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        seen.append(_seen_by_step.get())
        _seen_by_step.set(description)
        return "ok"

    brain = Brain([plan_json({"description": f"run {i}"}) for i in range(3)], work=work)
    async with _team(brain).start() as running:
        for i in range(3):
            await running.run(f"goal {i}")
    assert seen == ["unset", "unset", "unset"]


def _tracing() -> tuple[Telemetry, TracerProvider, SpanCollector]:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    return Telemetry(provider), provider, collector


class HangAfterWarmUp(Hang):
    """Hangs on every step but the warm-up; ``two_hang`` is set once two steps hang."""

    def __init__(self) -> None:
        super().__init__()
        self.hanging = 0
        self.two_hang = anyio.Event()

    async def __call__(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "warm-up":
            return "warm"
        self.hanging += 1
        if self.hanging == 2:
            self.two_hang.set()
        return await super().__call__(description, results, request)


async def test_steps_queued_behind_the_limit_are_cancelled_with_the_run() -> None:
    script = HangAfterWarmUp()
    telemetry, provider, collector = _tracing()
    team = _team(Brain([_WARM_UP, _FOUR], work=script), max_steps=2, telemetry=telemetry)
    async with team.start() as running:
        # The baseline is a warm team; parked runners are not counted (busy_tasks).
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        baseline = busy_tasks()
        collector.clear()

        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as scope:

                async def cancel_when_two_hang() -> None:
                    await script.two_hang.wait()
                    await anyio.wait_all_tasks_blocked()  # the other two are queued by now
                    scope.cancel()

                tg.start_soon(cancel_when_two_hang)
                await running.run("four things")
            assert scope.cancelled_caught
        assert {"task 1", "task 2"} <= set(script.cancelled)  # the running two were stopped
        assert script.hanging == 2  # the queued two never reached the model
        await anyio.wait_all_tasks_blocked()
        assert busy_tasks() == baseline
    assert idle_runners() == 0

    provider.shutdown()
    spans = collector.spans()
    (run_span,) = [s for s in spans if s.name == "invoke_agent t"]
    assert run_span.attributes is not None
    assert run_span.attributes[semconv.REGIMENT_RUN_STATUS] == "cancelled"
    steps = [s for s in spans if s.name == "invoke_agent w"]
    outcomes = {
        (s.attributes or {}).get(semconv.REGIMENT_STEP_ID): (s.attributes or {}).get(
            semconv.REGIMENT_STEP_OUTCOME
        )
        for s in steps
    }
    # Every step, queued or running, reported cancelled; none was committed.
    assert outcomes == {f"s{i}": "cancelled" for i in range(1, 5)}
    assert not [s for s in spans if s.name == "synthesize"]


async def test_leaving_the_team_block_with_steps_queued_leaves_no_tasks() -> None:
    script = HangAfterWarmUp()
    team = _team(Brain([_FOUR], work=script), max_steps=2)
    before = busy_tasks()
    outcome: list[str] = []
    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:
            async with team.start() as running:

                async def cancel_when_two_hang() -> None:
                    await script.two_hang.wait()
                    await anyio.wait_all_tasks_blocked()  # the other two are queued by now
                    scope.cancel()

                tg.start_soon(cancel_when_two_hang)
                await running.run("four things")
                outcome.append("run returned")
        assert scope.cancelled_caught
    assert outcome == []
    assert sorted(script.cancelled) == ["task 1", "task 2"]
    assert busy_tasks() == before
    assert idle_runners() == 0


async def test_leaving_the_team_block_while_a_run_waits_outside_it() -> None:
    # The run's caller is not cancelled: the team block ends under it, so the
    # worker stops with two steps running and two still queued.
    script = HangAfterWarmUp()
    team = _team(Brain([_FOUR], work=script), max_steps=2)
    before = busy_tasks()
    ended: list[str] = []
    async with anyio.create_task_group() as tg, team.start() as running:

        async def run() -> None:
            with pytest.raises(RunCancelled, match="the team stopped"):
                await running.run("four things")
            ended.append("run cancelled")

        tg.start_soon(run)
        await script.two_hang.wait()
        await anyio.wait_all_tasks_blocked()  # the other two are queued by now
    assert ended == ["run cancelled"]
    assert sorted(script.cancelled) == ["task 1", "task 2"]
    assert busy_tasks() == before
    assert idle_runners() == 0
