"""Checking a run's events: they may only name plan versions already announced."""

from __future__ import annotations

from collections.abc import Sequence

from regiment.hierarchy import (
    CheckFailed,
    Event,
    PlanCreated,
    Replanned,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
    StepErrored,
)


def announced_violations(events: Sequence[Event]) -> list[tuple[int, Event]]:
    """The events (with their index) that name a plan version no earlier
    ``PlanCreated``/``Replanned`` announced; empty when the story holds."""
    announced: set[int] = set()
    violations: list[tuple[int, Event]] = []
    for index, event in enumerate(events):
        named: tuple[int, ...] = ()
        match event:
            case PlanCreated(plan=plan):
                announced.add(plan.version)
            case Replanned(old_version=old, new_version=new):
                named = (old,)
                announced.add(new)
            case StaleReportDropped(report_version=report, current_version=current):
                named = (report, current)
            case StepDispatched() | StepCompleted() | StepErrored() | CheckFailed():
                named = (event.plan_version,)
            case _:
                pass
        if any(version not in announced for version in named):
            violations.append((index, event))
    return violations
