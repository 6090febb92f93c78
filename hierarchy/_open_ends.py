"""The ends a reader that left a run never got: of the tool calls and steps that had
started (see ``OpenEnds``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import final

from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.events import (
    ApprovalRequested,
    ApprovalResolved,
    CheckFailed,
    Event,
    RunCompleted,
    RunFailed,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
    StepErrored,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = ("OpenEnds",)

_CallKey = tuple[str, int | None, str, str]

_NO_REPORT = "cancelled with the run; its report did not come before the run ended"


@final
class OpenEnds:
    """The tool calls and steps a reader saw start but not end, to close them once it
    left the run (a Ctrl-C, a cancel): a run whose reader left tells it nothing more, so
    its events held a ``ToolCallStarted`` and a ``StepDispatched`` with no end.

    ``see`` each event read; ``ends(closing)`` gives the missing ends, from what the
    closing event's step reports say: a cut call's ``ToolCallFinished`` (outcome as its
    report's ``ToolOutcome.error_type``, ``"cut"``), each step's ``StepErrored`` (status
    ``cancelled``) or ``StepCompleted``. A call's ``duration`` is as the reader measured
    it, from its start's arrival to ``ends``; a step or call no report names (the run did
    not wind down in time) ends ``cancelled`` / ``"cut"``: the reader's leaving cut it;
    but a call that was still waiting for an approval decision (its ``ApprovalRequested``
    seen, no ``ApprovalResolved``) ends ``"awaiting_approval"``: its body never ran.
    """

    __slots__ = ("_asked", "_calls", "_clock", "_steps")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # a call by its run, its step's plan version (None: no step of it seen), step and id
        self._calls: dict[_CallKey, tuple[ToolCallStarted, float]] = {}
        self._steps: dict[tuple[str, int, str], StepDispatched] = {}  # last dispatched last
        # calls waiting for a decision: (run, step, call id) by their request's id
        self._asked: dict[str, tuple[str, str, str]] = {}

    def see(self, event: Event) -> None:
        """Note ``event``'s start or end, if it is one of a tool call or a step.

        A tool call's events name no plan version: a call is its step's in flight, the
        ``StepDispatched`` seen last for its step id (and worker, if one was) whose version
        has not ended (a replan can plan a step id again while the old version's step
        still runs); an end goes to the call open longest with its step id and call id
        (and worker, if one is: a replan cuts the old version's calls)."""
        match event:
            case ToolCallStarted(run_id=run, worker=worker, step_id=step, call_id=call):
                version = self._version(run, step, worker)
                self._calls[run, version, step, call] = (event, self._clock())
            case ToolCallFinished(run_id=run, worker=worker, step_id=step, call_id=call):
                keys = [k for k in self._calls if (k[0], k[2], k[3]) == (run, step, call)]
                mine = [k for k in keys if self._calls[k][0].worker == worker]
                if keys:
                    del self._calls[(mine or keys)[0]]
            case StepDispatched(run_id=run, plan_version=version, step_id=step):
                self._steps.pop((run, version, step), None)  # (again: the last seen)
                self._steps[run, version, step] = event
            case StepCompleted(run_id=run, plan_version=version, step_id=step):
                self._steps.pop((run, version, step), None)
            case StepErrored(run_id=run, plan_version=version, step_id=step):
                self._steps.pop((run, version, step), None)
            case CheckFailed(run_id=run, plan_version=version, step_id=step):
                self._steps.pop((run, version, step), None)  # it reported: its check said no
            case StaleReportDropped(run_id=run, report_version=version, step_id=step):
                self._steps.pop((run, version, step), None)
            case ApprovalRequested(run_id=run, request=request):
                self._asked[request.request_id] = (run, request.step_id, request.call_id)
            case ApprovalResolved(request_id=request_id):  # decided: an approved body runs
                self._asked.pop(request_id, None)
            case _:
                pass

    def _version(self, run: str, step: str, worker: str) -> int | None:
        """The plan version of step ``step``'s in flight, dispatched last (to ``worker``
        if one was; ``None``: none seen)."""
        going = [
            (v, d.worker) for (r, v, s), d in reversed(self._steps.items()) if (r, s) == (run, step)
        ]
        return next((v for v, w in going if w == worker), going[0][0] if going else None)

    def ends(self, closing: RunCompleted | RunFailed | None) -> list[Event]:
        """The ends of what started and did not end (calls first, then steps), once each;
        ``closing``: the run's last event, whose step reports say how each ended."""
        reports = _reports(closing)
        asked = set(self._asked.values())
        now = self._clock()
        found: list[Event] = []
        for (_, version, step, call), (started, at) in self._calls.items():
            said = next(
                (
                    o
                    for r in reports
                    if r.step_id == step and version in (None, r.plan_version)
                    for o in r.tool_outcomes
                    if o.call_id == call
                ),
                None,
            )
            if said is not None:
                outcome = said.error_type or ("error" if said.is_error else "ok")
            else:
                outcome = "awaiting_approval" if (started.run_id, step, call) in asked else "cut"
            found.append(_finished(started, max(0.0, now - at), outcome))
        for (_, version, step), dispatched in self._steps.items():
            report = next(
                (r for r in reports if (r.plan_version, r.step_id) == (version, step)), None
            )
            found.append(_step_end(dispatched, report))
        self._calls.clear()
        self._steps.clear()
        self._asked.clear()
        return found


def _reports(closing: RunCompleted | RunFailed | None) -> tuple[StepReport, ...]:
    match closing:
        case RunCompleted(result=result):
            return result.steps
        case RunFailed(steps=steps):
            return steps
        case _:
            return ()


def _finished(started: ToolCallStarted, duration: float, outcome: str) -> ToolCallFinished:
    return ToolCallFinished(
        run_id=started.run_id,
        worker=started.worker,
        step_id=started.step_id,
        tool=started.tool,
        call_id=started.call_id,
        arguments=started.arguments,
        duration=duration,
        outcome=outcome,
    )


def _step_end(dispatched: StepDispatched, report: StepReport | None) -> Event:
    d = dispatched
    if report is None:
        return StepErrored(
            run_id=d.run_id,
            plan_version=d.plan_version,
            step_id=d.step_id,
            worker=d.worker,
            status="cancelled",
            error=_NO_REPORT,
        )
    if report.status == "done":  # it finished its work as the run was cancelled
        return StepCompleted(
            run_id=d.run_id,
            plan_version=d.plan_version,
            step_id=d.step_id,
            worker=d.worker,
            output=report.output,
            usage=report.usage,
        )
    return StepErrored(
        run_id=d.run_id,
        plan_version=d.plan_version,
        step_id=d.step_id,
        worker=d.worker,
        status=report.status,
        error=report.error or report.status,
        usage=report.usage,
    )
