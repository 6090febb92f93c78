"""``OpenEnds``: the ends a reader that left a run builds from its closing event's step
reports (the CLI and the service close a cancelled run's events with them)."""

from __future__ import annotations

from regiment.hierarchy import (
    OpenEnds,
    RunFailed,
    StepCompleted,
    StepDispatched,
    StepErrored,
    StepReport,
    ToolCallFinished,
    ToolCallStarted,
    ToolOutcome,
)


def _dispatched(step: str) -> StepDispatched:
    return StepDispatched(run_id="r", plan_version=1, step_id=step, worker="w", attempt=1)


def test_the_ends_say_what_the_reports_say_and_cancelled_without_one() -> None:
    clock = iter([10.0, 12.5, 13.0])
    opened = OpenEnds(clock=lambda: next(clock))
    for step in ("s1", "s2", "s3", "s4"):
        opened.see(_dispatched(step))
    opened.see(
        StepErrored(
            run_id="r", plan_version=1, step_id="s4", worker="w", status="failed", error="x"
        )
    )  # ended: no end made for it
    opened.see(
        ToolCallStarted(run_id="r", worker="w", step_id="s1", tool="t", call_id="c1", arguments={})
    )
    cut = ToolOutcome(tool="t", call_id="c1", arguments={}, content="", error_type="cut")
    reports = (
        StepReport(
            run_id="r",
            plan_version=1,
            step_id="s1",
            attempt=1,
            worker="w",
            status="cancelled",
            error="cancelled",
            tool_outcomes=(cut,),
        ),
        StepReport(
            run_id="r",
            plan_version=1,
            step_id="s2",
            attempt=1,
            worker="w",
            status="done",
            output="kept",
        ),
    )
    closing = RunFailed(run_id="r", error_type="RunCancelled", message="m", steps=reports)
    ends = opened.ends(closing)
    assert ends == [
        ToolCallFinished(
            run_id="r",
            worker="w",
            step_id="s1",
            tool="t",
            call_id="c1",
            arguments={},
            duration=2.5,
            outcome="cut",
        ),
        StepErrored(
            run_id="r",
            plan_version=1,
            step_id="s1",
            worker="w",
            status="cancelled",
            error="cancelled",
        ),
        StepCompleted(run_id="r", plan_version=1, step_id="s2", worker="w", output="kept"),
        StepErrored(
            run_id="r",
            plan_version=1,
            step_id="s3",
            worker="w",
            status="cancelled",
            error="cancelled with the run; its report did not come before the run ended",
        ),
    ]
    assert opened.ends(closing) == []  # once each
