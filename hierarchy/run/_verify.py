"""Judging a step's report before it is committed: its status, then its check
(a plain predicate, not a model call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import final

import msgspec

from regiment.hierarchy._checks import Check, CheckOutcome
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.run._changes import CheckRejected, StepCommitted, StepEnded
from regiment.hierarchy.run._logs import check_raised
from regiment.hierarchy.run._phase import EndCancelled, Ending
from regiment.hierarchy.run._trace import RunTrace
from regiment.hierarchy.run._versions import PlanVersions

__all__ = ("Verifier",)


@final
class Verifier:
    """Runs a step's check inside a ``verify`` span under the run span."""

    def __init__(
        self, checks: Mapping[str, Check], trace: RunTrace, artifacts: frozenset[str]
    ) -> None:
        self._checks = checks
        self._trace = trace
        self._artifacts = artifacts  # the workers whose output is kept verbatim

    def judge(
        self, report: StepReport, step: PlanStep, *, artifact: bool
    ) -> StepEnded | CheckRejected | StepCommitted:
        """What a current-version report means for its step: it ended without an
        answer, its check rejected it, or it is committed (``artifact``: kept verbatim)."""
        if report.status == "budget_exhausted":
            detail = f"step {step.id} used up its share of the budget: {report.error}"
            return StepEnded(report, detail)
        if report.status != "done":
            detail = report.error or "no detail"
            return StepEnded(
                report, f"step {step.id} ({step.description}) ended {report.status}: {detail}"
            )
        if step.check is not None:
            outcome = self.verify(report, step.check)
            if not outcome.passed:
                detail = f"step {step.id} failed its check '{step.check}': {outcome.reason}"
                return CheckRejected(report, step.check, outcome.reason, detail)
        return StepCommitted(report, artifact)

    def at_end(
        self, report: StepReport, versions: PlanVersions, ending: Ending
    ) -> StepEnded | CheckRejected | StepCommitted:
        """What a current-version report that came as its run winds down (to ``ending``)
        means. Cancelled by the wind-down, it ended. ``done``: its work was done (its side
        effects happened), so it is judged and kept as :meth:`judge` says, and counted,
        though nothing follows from it (no dispatch, no replan). When the caller left
        (``EndCancelled``) no reader follows the run: no event either."""
        quiet = type(ending) is EndCancelled
        if report.status != "done":
            return StepEnded(report, "the run is ending", quiet)
        step = versions.step(report.step_id)
        change = self.judge(report, step, artifact=report.worker in self._artifacts)
        if not quiet:
            return change
        if isinstance(change, StepCommitted):
            return msgspec.structs.replace(change, quiet=True)
        return StepEnded(report, change.detail, quiet=True)  # a rejected check: kept, quietly

    def verify(self, report: StepReport, check: str) -> CheckOutcome:
        """The outcome of the check named ``check`` on ``report`` (never raises for a bad report)."""
        with (
            self._trace.in_run(),
            self._trace.telemetry.verify_span(
                report.step_id, check=check, plan_version=report.plan_version
            ) as span,
        ):
            outcome = self._checks[check].run(report)
            recorder = self._trace.telemetry.recorder
            recorder.check(span, passed=outcome.passed, detail=outcome.reason)
            if outcome.error is not None:  # a bug in the check, not a verdict: ERROR
                recorder.failure(span, outcome.error)
        if outcome.error is not None:  # the application's code broke: told once, as a guard's
            check_raised(report.run_id, report, check, outcome)
        return outcome
