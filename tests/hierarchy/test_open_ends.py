"""``OpenEnds``: the ends a reader that left a run builds from its closing event's step
reports (the CLI and the service close a cancelled run's events with them)."""

from __future__ import annotations

from collections.abc import Sequence

from regiment.hierarchy import (
    CheckFailed,
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


def _started(step: str, call: str) -> ToolCallStarted:
    return ToolCallStarted(
        run_id="r", worker="w", step_id=step, tool="t", call_id=call, arguments={}
    )


def _report(version: int, error_type: str) -> StepReport:
    outcome = ToolOutcome(
        tool="t", call_id="call-0", arguments={}, content="", is_error=True, error_type=error_type
    )
    return StepReport(
        run_id="r",
        plan_version=version,
        step_id="s1",
        attempt=1,
        worker="w",
        status="cancelled",
        error=f"v{version} cut",
        tool_outcomes=(outcome,),
    )


def _outcomes(ends: Sequence[object]) -> list[str]:
    return [e.outcome for e in ends if isinstance(e, ToolCallFinished)]


def test_a_step_id_planned_again_keeps_each_version_s_open_call() -> None:
    """A replan reused s1 and each version's s1 had its "call-0" open: both get an end,
    each with the outcome its own version's report gives."""
    opened = OpenEnds(clock=float)
    opened.see(_dispatched("s1"))
    opened.see(_started("s1", "call-0"))  # v1's
    opened.see(StepDispatched(run_id="r", plan_version=2, step_id="s1", worker="w", attempt=1))
    opened.see(_started("s1", "call-0"))  # v2's
    closing = RunFailed(
        run_id="r",
        error_type="RunCancelled",
        message="m",
        steps=(_report(2, "timeout"), _report(1, "cut")),
    )
    ends = opened.ends(closing)
    assert _outcomes(ends) == ["cut", "timeout"]  # v1's call, then v2's
    assert [(e.plan_version, e.error) for e in ends if isinstance(e, StepErrored)] == [
        (1, "v1 cut"),
        (2, "v2 cut"),
    ]


def test_a_call_takes_its_outcome_from_its_own_version_s_report() -> None:
    """v1's s1 ended (its report came); the open call is v2's s1's, and only v2's report
    says how it ended, though v1's report names a "call-0" too."""
    opened = OpenEnds(clock=float)
    opened.see(_dispatched("s1"))
    opened.see(
        StepErrored(
            run_id="r", plan_version=1, step_id="s1", worker="w", status="cancelled", error="x"
        )
    )
    opened.see(StepDispatched(run_id="r", plan_version=2, step_id="s1", worker="w", attempt=1))
    opened.see(_started("s1", "call-0"))
    closing = RunFailed(
        run_id="r",
        error_type="RunCancelled",
        message="m",
        steps=(_report(1, "ok_in_v1"), _report(2, "timeout")),
    )
    assert _outcomes(opened.ends(closing)) == ["timeout"]
    opened.see(_dispatched("s1"))  # v1 again: a call of it is v1's, with no report of v1
    opened.see(_started("s1", "call-0"))
    only_v2 = RunFailed(
        run_id="r", error_type="RunCancelled", message="m", steps=(_report(2, "timeout"),)
    )
    assert _outcomes(opened.ends(only_v2)) == ["cut"]


def test_a_finished_call_ends_its_older_version_s_first() -> None:
    """Both versions' "call-0" open, one ``ToolCallFinished`` comes (the cut v1 call's, as
    a replan cuts the old step): the one left open is v2's, ended from v2's report."""
    opened = OpenEnds(clock=float)
    opened.see(_dispatched("s1"))
    opened.see(_started("s1", "call-0"))
    opened.see(StepDispatched(run_id="r", plan_version=2, step_id="s1", worker="w", attempt=1))
    opened.see(_started("s1", "call-0"))
    opened.see(
        ToolCallFinished(
            run_id="r",
            worker="w",
            step_id="s1",
            tool="t",
            call_id="call-0",
            arguments={},
            duration=0.0,
            outcome="cut",
        )
    )
    closing = RunFailed(
        run_id="r",
        error_type="RunCancelled",
        message="m",
        steps=(_report(1, "v1_outcome"), _report(2, "timeout")),
    )
    assert _outcomes(opened.ends(closing)) == ["timeout"]


def test_a_step_its_check_rejected_has_ended() -> None:
    """A step whose check failed reported (``CheckFailed`` is its end): no end is made
    for it, where one was a ``StepCompleted`` from its report, after its ``CheckFailed``."""
    opened = OpenEnds(clock=float)
    opened.see(_dispatched("s2"))
    opened.see(CheckFailed(run_id="r", plan_version=1, step_id="s2", check="no", reason="x"))
    done = StepReport(
        run_id="r", plan_version=1, step_id="s2", attempt=1, worker="w", status="done", output="o"
    )
    closing = RunFailed(run_id="r", error_type="RunCancelled", message="m", steps=(done,))
    assert opened.ends(closing) == []


def test_a_finished_call_is_its_worker_s_when_the_versions_ran_on_two() -> None:
    """v1's s1 on worker a, v2's s1 on b, each with "call-0" open; b's call ends: the one
    left open is a's (v1's), ended from v1's report, and a call a starts is v1's."""
    opened = OpenEnds(clock=float)
    opened.see(StepDispatched(run_id="r", plan_version=1, step_id="s1", worker="a", attempt=1))
    opened.see(StepDispatched(run_id="r", plan_version=2, step_id="s1", worker="b", attempt=1))
    for worker in ("a", "b"):
        opened.see(
            ToolCallStarted(
                run_id="r", worker=worker, step_id="s1", tool="t", call_id="call-0", arguments={}
            )
        )
    opened.see(
        ToolCallFinished(
            run_id="r",
            worker="b",
            step_id="s1",
            tool="t",
            call_id="call-0",
            arguments={},
            duration=0.0,
            outcome="ok",
        )
    )
    closing = RunFailed(
        run_id="r",
        error_type="RunCancelled",
        message="m",
        steps=(_report(1, "cut"), _report(2, "timeout")),
    )
    ends = opened.ends(closing)
    assert [(e.worker, e.outcome) for e in ends if isinstance(e, ToolCallFinished)] == [
        ("a", "cut")
    ]
