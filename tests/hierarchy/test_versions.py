"""A report from an old plan version is dropped under any interleaving."""

from __future__ import annotations

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import (
    Check,
    Planner,
    Replanned,
    RunCompleted,
    StaleReportDropped,
    StepReport,
    Team,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    ToolResultPart,
)
from regiment.telemetry import SpanCollector, Telemetry

from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, probe_after_slow, replan_team

pytestmark = pytest.mark.anyio


def _never_ok(report: StepReport) -> bool:
    return False


async def test_late_report_of_old_version_is_never_committed_or_built_on() -> None:
    replanned = anyio.Event()
    late_report_seen = anyio.Event()

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "slow draft":
            # A model call already on the wire: it finishes even though the step was cancelled.
            with anyio.CancelScope(shield=True):
                await replanned.wait()
            return "SLOW-DRAFT-OUTPUT"
        if description == "recover":
            await late_report_seen.wait()  # finish version 2 only after the late report
        return f"did: {description}"

    v1 = plan_json(
        PROBE,
        {"id": "s2", "description": "slow draft"},
        {"id": "s3", "description": "use draft", "depends_on": ["s2"]},
    )
    brain = Brain([v1, RECOVER], work=probe_after_slow(work))
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team = replan_team(brain, telemetry=Telemetry(provider))
    events = []
    async with team.start() as running, running.stream("goal") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, Replanned):
                replanned.set()
            if isinstance(event, StaleReportDropped):
                late_report_seen.set()
    closing = events[-1]
    assert isinstance(closing, RunCompleted)
    result = closing.result
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.report_version, e.current_version) for e in dropped] == [("s2", 1, 2)]
    assert dropped[0].status == "done"  # it really finished, and still was not applied
    assert result.stale_reports_dropped == 1
    assert "s2" not in result.committed
    assert result.committed == ("s4",)
    assert result.rejected == ("s1",)
    assert all("SLOW-DRAFT-OUTPUT" not in _text(r) for r in brain.worker_requests)
    assert "SLOW-DRAFT-OUTPUT" not in result.answer
    assert all(r.step_id != "s2" for r in result.steps)
    # The drop is on the trace too: an event on the run's root span.
    provider.shutdown()
    (root,) = [s for s in collector.spans() if s.name == "invoke_agent t"]
    stale = [e for e in root.events if e.name == "regiment.report.stale_dropped"]
    assert len(stale) == 1
    assert stale[0].attributes is not None
    assert stale[0].attributes["regiment.step.id"] == "s2"
    assert root.attributes is not None
    assert root.attributes["regiment.reports.stale_dropped"] == 1


async def test_a_run_ends_only_once_the_steps_a_replan_cancelled_have_reported() -> None:
    """A step of the old version still ending (a call that finishes though cancelled)
    when the new version is done: the run waits for its report, so the drop is one of
    the run's events and what the step spent is the run's."""
    answered = anyio.Event()

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "slow draft":
            with anyio.CancelScope(shield=True):  # on the wire until the answer is written
                await answered.wait()
            return "SLOW-DRAFT-OUTPUT"
        return f"did: {description}"

    class Answering(Brain):
        async def __call__(self, request: ModelRequest) -> ModelResponse | str:
            if request.role == "synthesizer":
                answered.set()
            return await super().__call__(request)

    brain = Answering(
        [plan_json(PROBE, {"id": "s2", "description": "slow draft"}), RECOVER],
        work=probe_after_slow(work),
    )
    team = replan_team(brain)
    model = team.planner.model
    assert isinstance(model, ScriptedModel)
    result = await team.run("goal")
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.report_version, e.current_version) for e in dropped] == [("s2", 1, 2)]
    assert result.stale_reports_dropped == 1
    assert result.model_calls == model.calls == 6  # two plans, three steps, the answer
    assert result.committed == ("s3",)
    assert result.rejected == ("s1",)
    assert "SLOW-DRAFT-OUTPUT" not in result.answer


async def test_replans_are_bounded_then_step_failed() -> None:
    from regiment.errors import StepFailed
    from regiment.hierarchy import Budget

    brain = Brain([plan_json({"description": "probe", "check": "fails"})] * 3)
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does things", model=model)],
        checks={
            "fails": Check(
                description="never passes", predicate=_never_ok, explain=lambda r: "still wrong"
            )
        },
        budget=Budget(replans=2),
    )
    with pytest.raises(StepFailed) as info:
        await team.run("goal")
    assert info.value.worker == "w"
    assert "still wrong" in info.value.cause
    assert len(brain.plan_requests) == 3  # the first plan and two replans


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))
