"""Teams as workers: plan versions per team, stale reports dropped per level, one trace."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from regiment.errors import ConfigError
from regiment.hierarchy import (
    Check,
    Planner,
    RunCompleted,
    RunFailed,
    StaleReportDropped,
    StepErrored,
    StepReport,
    Team,
    TeamWorker,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, TextPart, ToolResultPart
from regiment.telemetry import SpanCollector, Telemetry

from ..jump_clock import NEVER, skip
from .brains import Brain, Hang, plan_json
from .tasks import busy_tasks, idle_runners

pytestmark = pytest.mark.anyio


def _never_ok(report: StepReport) -> bool:
    return False


_FAILS = {"fails": Check(description="never passes", predicate=_never_ok)}


def _tracing() -> tuple[Telemetry, TracerProvider, SpanCollector]:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    return Telemetry(provider), provider, collector


def _one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _first_text(request: ModelRequest) -> str:
    return "".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))


def _parent_id(span: ReadableSpan) -> int:
    assert span.parent is not None, span.name
    return span.parent.span_id


def _child_team(brain: Brain) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="research-team",
        planner=Planner(model=model),
        workers=[Worker(name="digger", description="digs up facts", model=model)],
        checks=_FAILS,
    )


async def test_child_replans_while_the_parent_stays_on_its_plan_in_one_trace() -> None:
    child_brain = Brain(
        [
            plan_json({"description": "probe", "check": "fails"}),
            plan_json({"description": "dig properly", "depends_on": ["s1"]}),
        ],
        synthesis="the number is 42",
    )
    parent_brain = Brain(
        [
            plan_json(
                {"description": "find the number", "worker": "research"},
                {"description": "write it up", "worker": "writer", "depends_on": ["s1"]},
            )
        ],
        synthesis="report: 42",
    )
    parent_model = ScriptedModel(parent_brain)
    telemetry, provider, collector = _tracing()
    team = Team(
        name="parent",
        planner=Planner(model=parent_model),
        workers=[
            TeamWorker(name="research", description="finds things", team=_child_team(child_brain)),
            Worker(name="writer", description="writes", model=parent_model),
        ],
        telemetry=telemetry,
    )
    result = await team.run("report the number")

    # The child replanned (two plan requests, the second after the failed check) ...
    assert len(child_brain.plan_requests) == 2
    assert "failed its check 'fails'" in _first_text(child_brain.plan_requests[1])
    # ... while the parent stayed on version 1 and built on the child's answer.
    assert [p.version for p in result.plans] == [1]
    assert result.committed == ("s1", "s2")
    assert result.output_of("s1") == "the number is 42"
    assert result.stale_reports_dropped == 0
    (write_up,) = parent_brain.worker_requests
    assert "s1: the number is 42" in _first_text(write_up)
    # The child's goal is the step plus the parent's goal; its planner was told so.
    first_child_plan = _first_text(child_brain.plan_requests[0])
    assert "find the number" in first_child_plan
    assert "report the number" in first_child_plan
    # The parent's planner sees what the sub-team can do.
    assert "research: finds things Tools: digger." in parent_brain.plan_requests[0].system
    # The child's spend reached the parent's books.
    (s1_report,) = [r for r in result.steps if r.step_id == "s1"]
    assert s1_report.worker == "research"
    assert s1_report.model_calls == 5  # child: plan, probe, replan, dig, synthesis
    assert result.model_calls == 1 + 5 + 1 + 1

    provider.shutdown()
    spans = collector.spans()
    assert len({s.context.trace_id for s in spans}) == 1  # one trace across both levels
    root = _one(spans, "invoke_agent parent")
    worker_span = _one(spans, "invoke_agent research")
    child_root = _one(spans, "invoke_agent research-team")
    assert _parent_id(worker_span) == root.context.span_id
    assert _parent_id(child_root) == worker_span.context.span_id
    replans = [s for s in spans if (s.attributes or {}).get("regiment.plan.replan")]
    assert [s.name for s in replans] == ["plan planner"]
    assert _parent_id(replans[0]) == child_root.context.span_id
    diggers = [s for s in spans if s.name == "invoke_agent digger"]
    assert len(diggers) == 2
    assert all(_parent_id(s) == child_root.context.span_id for s in diggers)
    assert child_root.attributes is not None
    assert root.attributes is not None
    assert child_root.attributes["regiment.plan.versions"] == 2
    assert root.attributes["regiment.plan.versions"] == 1


async def test_parent_replan_cancels_the_child_run_and_drops_its_late_report() -> None:
    dig = Hang()
    stale_seen = anyio.Event()

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "probe":
            await dig.started.wait()  # the parent replans only once the child is mid-run
        if description == "recover":
            await stale_seen.wait()  # the parent finishes only after the late report came back
        return f"did: {description}"

    child_brain = Brain([plan_json({"description": "dig forever"})], work=dig)
    parent_brain = Brain(
        [
            plan_json(
                {"description": "probe", "worker": "w", "check": "fails"},
                {"description": "delegate", "worker": "research"},
            ),
            plan_json({"description": "recover", "worker": "w", "depends_on": ["s1"]}),
        ],
        work=work,
    )
    parent_model = ScriptedModel(parent_brain)
    telemetry, provider, collector = _tracing()
    team = Team(
        name="parent",
        planner=Planner(model=parent_model),
        workers=[
            Worker(name="w", description="does things", model=parent_model),
            TeamWorker(name="research", description="finds things", team=_child_team(child_brain)),
        ],
        checks=_FAILS,
        telemetry=telemetry,
    )
    events = []
    async with team.start() as running, running.stream("goal") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, StaleReportDropped):
                stale_seen.set()
    closing = events[-1]
    assert isinstance(closing, RunCompleted)
    result = closing.result

    assert dig.cancelled == ["dig forever"]  # the child's work for the old version stopped
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.report_version, e.current_version, e.status) for e in dropped] == [
        ("s2", 1, 2, "cancelled")
    ]
    assert result.stale_reports_dropped == 1
    assert [p.version for p in result.plans] == [1, 2]
    assert result.committed == ("s3",)
    assert result.rejected == ("s1",)
    assert all(r.step_id != "s2" for r in result.steps)
    assert result.status == "completed"

    provider.shutdown()
    spans = collector.spans()
    child_root = _one(spans, "invoke_agent research-team")
    assert child_root.attributes is not None
    assert child_root.attributes["regiment.run.status"] == "cancelled"
    worker_span = _one(spans, "invoke_agent research")
    assert _parent_id(child_root) == worker_span.context.span_id


async def test_cancelling_the_parent_run_cancels_the_child_and_leaves_no_tasks() -> None:
    dig = Hang()

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "warm" if description == "warm-up" else await dig(description, results, request)

    child_brain = Brain(
        [plan_json({"description": "warm-up"}), plan_json({"description": "dig forever"})],
        work=work,
    )
    delegate = plan_json({"description": "delegate", "worker": "research"})
    parent_brain = Brain([delegate, delegate])
    team = Team(
        name="parent",
        planner=Planner(model=ScriptedModel(parent_brain)),
        workers=[
            TeamWorker(name="research", description="finds things", team=_child_team(child_brain))
        ],
    )
    async with team.start() as running:
        # The baseline is a warm team; parked runners are not counted (busy_tasks).
        await running.run("warm up")
        await anyio.wait_all_tasks_blocked()
        baseline = busy_tasks()
        async with anyio.create_task_group() as tg:
            tg.start_soon(running.run, "goal")
            await dig.started.wait()
            tg.cancel_scope.cancel()
        assert dig.cancelled == ["dig forever"]
        await anyio.wait_all_tasks_blocked()
        assert busy_tasks() == baseline
    assert idle_runners() == 0


async def test_leaving_the_parent_block_mid_child_run_leaves_no_tasks() -> None:
    child_started = anyio.Event()

    async def hang(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        child_started.set()
        await anyio.Event().wait()
        raise AssertionError("unreachable")

    child_brain = Brain([plan_json({"description": "dig forever"})], work=hang)
    parent_brain = Brain([plan_json({"description": "delegate", "worker": "research"})])
    team = Team(
        name="parent",
        planner=Planner(model=ScriptedModel(parent_brain)),
        workers=[
            TeamWorker(name="research", description="finds things", team=_child_team(child_brain))
        ],
    )
    before = busy_tasks()
    async with anyio.create_task_group() as tg, team.start() as running:
        tg.start_soon(running.run, "goal")
        await child_started.wait()
        tg.cancel_scope.cancel()
    assert child_started.is_set()
    assert busy_tasks() == before
    assert idle_runners() == 0


@pytest.mark.jump_clock
async def test_a_team_worker_s_step_timeout_stops_the_child_run_and_reports_timed_out() -> None:
    """As a ``Worker``'s: the step ends ``timed_out``, and the child run really stops
    (its hung step is cancelled, its run span ends cancelled, no task is left). The
    timeout is never reached in real time (a short one could fire before the child run
    reached its hung step, and nothing of the child was cut): once the step hangs, the
    clock is moved past it, so the timeout fires while it waits."""
    dig = Hang()
    child_brain = Brain([plan_json({"description": "dig forever"})], work=dig)
    parent_brain = Brain([plan_json({"description": "delegate", "worker": "research"})])
    telemetry, provider, collector = _tracing()
    child = _child_team(child_brain)
    team = Team(
        name="parent",
        planner=Planner(model=ScriptedModel(parent_brain)),
        workers=[TeamWorker(name="research", description="d", team=child, step_timeout=NEVER)],
        telemetry=telemetry,
    )
    before = busy_tasks()

    async def time_out_once_it_hangs() -> None:
        await dig.started.wait()
        await skip(NEVER)

    async with (
        team.start() as running,
        running.stream("goal") as stream,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(time_out_once_it_hangs)
        events = [event async for event in stream]
    assert dig.started.is_set(), "the step timed out before the child's step started"
    assert dig.cancelled == ["dig forever"]  # the child's own step was cut
    (errored,) = [e for e in events if isinstance(e, StepErrored)]
    assert (errored.step_id, errored.worker, errored.status) == ("s1", "research", "timed_out")
    assert f"step_timeout of {NEVER}s" in errored.error
    closing = events[-1]
    assert isinstance(closing, RunFailed)
    assert busy_tasks() == before
    assert idle_runners() == 0
    provider.shutdown()
    child_root = _one(collector.spans(), "invoke_agent research-team")
    assert child_root.attributes is not None
    assert child_root.attributes["regiment.run.status"] == "cancelled"


def test_a_team_worker_s_step_timeout_is_checked_as_a_worker_s() -> None:
    child = _child_team(Brain([plan_json({"description": "x"})]))
    with pytest.raises(ConfigError, match="step_timeout must be a finite number of seconds > 0"):
        TeamWorker(name="research", description="d", team=child, step_timeout=-1)
    assert TeamWorker(name="research", description="d", team=child).step_timeout is None
