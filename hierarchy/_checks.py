"""Checks: plain predicates over a step's report, run by the planner before it commits.

A check is not a model call. It passes when its predicate returns ``True``; it
fails when the predicate returns ``False`` or raises (for instance because the
step never called the tool the check reads), and the failure reason is what the
planner model is told when it replans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import final

from regiment._stray import stray, stray_reason
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._ranges import InvalidValue

__all__ = ("Check", "CheckOutcome")


@final
@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """The verdict of one check on one report.

    Attributes:
        passed: the report is acceptable.
        reason: why not (what the planner is told when it replans).
        error: what the check's predicate (or its ``explain``) raised, when it raised:
            the run logs it once, as it logs a guard that raised.
    """

    passed: bool
    reason: str
    error: BaseException | None = field(default=None, compare=False, repr=False)


@final
@dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    """A named predicate a plan step can carry (``"check": "<name>"`` in the plan).

    Attributes:
        description: what it verifies; the planner reads this.
        predicate: ``True`` when the step's report is acceptable.
        explain: the failure reason from the report (default: ``not met: <description>``:
            the description alone read as if the check had found it true).
    """

    description: str
    predicate: Callable[[StepReport], bool]
    explain: Callable[[StepReport], str] | None = None

    def __post_init__(self) -> None:
        # Refused when made: a check that cannot be called failed every step it judged.
        if not isinstance(self.description, str) or not self.description.strip():
            problem = "must say what the check verifies (the planner reads it)"
            raise InvalidValue("Check", "description", f"{problem}; got {self.description!r}")
        predicate: object = self.predicate  # what the caller gave, whatever its annotation
        explain: object = self.explain
        if not callable(predicate):
            problem = "must be a function of a StepReport (True when the report is acceptable)"
            raise InvalidValue("Check", "predicate", f"{problem}; got {_shown(predicate)}")
        if explain is not None and not callable(explain):
            problem = "must be a function of a StepReport (the reason it was not acceptable)"
            raise InvalidValue("Check", "explain", f"{problem}, or None; got {_shown(explain)}")

    def run(self, report: StepReport) -> CheckOutcome:
        """Apply the check; never raises for a bad report."""
        try:
            if self.predicate(report):
                return CheckOutcome(passed=True, reason="")
        except BaseException as exc:  # a predicate that cannot read the report is a failed check
            reason = f"check could not read step {report.step_id}: {_why(exc)}"
            return CheckOutcome(passed=False, reason=reason, error=exc)
        reason, error = f"not met: {self.description}", None
        if self.explain is not None:
            try:
                reason = self.explain(report)
            except BaseException as exc:
                reason, error = f"{reason} (explain failed: {_why(exc)})", exc
        return CheckOutcome(passed=False, reason=reason, error=error)


def _shown(value: object) -> str:
    return "None" if value is None else f"the {type(value).__name__} {value!r:.60}"


def _why(exc: BaseException) -> str:
    """What a predicate or ``explain`` raised, as a failure reason; an interrupt or a
    real cancellation passes on. asyncio's ``CancelledError`` raised by the check itself
    (nothing cancels plain code) would end the run's planner (see :mod:`regiment._stray`)."""
    if isinstance(exc, Exception):
        return f"{type(exc).__name__}: {exc}"
    if not stray(exc):
        raise exc
    return (
        f"it {stray_reason(exc)}; a check returns False, or raises an Exception, for a "
        "report it does not accept"
    )
