"""Sending steps to workers: which steps are ready, each one's budget share, the
steps in flight by plan version, and cancelling them.

This is the per-step hot path: a report costs no pass over the whole plan (the
steps still waiting are kept in plan order, per version).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping
from typing import final

from regiment.actors import ActorContext, ActorRef
from regiment.errors import ActorStopped, MailboxFull
from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._messages import (
    AssignStep,
    CancelStep,
    StepReport,
    WorkerMessage,
)
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.run._changes import StepSent
from regiment.hierarchy.run._fan_out import reserve_fan_out
from regiment.hierarchy.run._messages import PlannerMessage
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._versions import PlanVersions

__all__ = ("Dispatcher",)

_NONE_RUNNING: dict[str, int] = {}


@final
class Dispatcher:
    """The steps of one run that are in flight, and the ones waiting to go."""

    def __init__(self, team: TeamRuntime, run_id: str, headers: Mapping[str, str]) -> None:
        self._team = team
        self._run_id = run_id
        self._headers = headers
        self.inflight: dict[tuple[int, str, int], str] = {}  # (version, step, attempt) -> worker
        # inflight's step ids per plan version, with how many attempts of each are out
        self._running: dict[int, dict[str, int]] = {}
        # The current version's steps neither committed nor dispatched yet, in plan order.
        self._waiting: tuple[int, dict[str, PlanStep]] = (0, {})

    def running_ids(self, version: int) -> Collection[str]:
        """Ids of the steps of ``version`` dispatched and not yet reported (read only)."""
        return self._running.get(version, _NONE_RUNNING)

    def ready(self, versions: PlanVersions) -> list[PlanStep]:
        """The current plan's steps to dispatch now, in plan order, within the team's
        concurrency: not committed, not dispatched, every dependency committed."""
        committed, version = versions.committed, versions.version
        waiting_version, waiting = self._waiting
        if waiting_version != version:
            running = self.running_ids(version)
            waiting = {
                s.id: s
                for s in versions.plan.steps
                if s.id not in committed and s.id not in running
            }
            self._waiting = (version, waiting)
        room = max(0, self._team.concurrency - len(self._running.get(version, _NONE_RUNNING)))
        if room == 0:
            return []
        is_committed = committed.__contains__  # map() over it: no generator frame per step
        ready = [s for s in waiting.values() if all(map(is_committed, s.depends_on))]
        return ready[:room]

    def next_sends(
        self, versions: PlanVersions, ledger: BudgetLedger, goal: str
    ) -> tuple[list[StepSent], tuple[BudgetLimit, str] | None]:
        """The ready steps to send now, each with its share of the budget reserved
        (see :mod:`._fan_out`); and, if the budget held some back, the budget field
        that did and the first step held back."""
        ready = self.ready(versions)
        if not ready:
            return [], None
        # The steps still to send: the waiting ones (not committed, not dispatched).
        pending = len(self._waiting[1])
        dispatches, short_of = reserve_fan_out(
            team=self._team,
            versions=versions,
            ledger=ledger,
            goal=goal,
            ready=ready,
            pending=pending,
        )
        version = versions.version
        sends = [
            StepSent(
                AssignStep(
                    run_id=self._run_id,
                    plan_version=version,
                    step=d.step,
                    context=d.context,
                    attempt=1,
                    allowance=d.allowance,
                ),
                d.worker.name,
            )
            for d in dispatches
        ]
        return sends, None if short_of is None else (short_of, ready[len(sends)].id)

    def sent(self, assign: AssignStep, worker: str) -> None:
        """Record a step sent to ``worker``."""
        version, step_id = assign.plan_version, assign.step.id
        self.inflight[(version, step_id, assign.attempt)] = worker
        if self._waiting[0] == version:
            self._waiting[1].pop(step_id, None)
        running = self._running.setdefault(version, {})
        running[step_id] = running.get(step_id, 0) + 1

    def reported(self, report: StepReport) -> None:
        """Record that a dispatched step has reported (or will never report)."""
        version, step_id = report.plan_version, report.step_id
        if self.inflight.pop((version, step_id, report.attempt), None) is None:
            return
        running = self._running[version]
        if running[step_id] == 1:
            del running[step_id]
        else:
            running[step_id] -= 1

    def cancel_all(self, ctx: ActorContext[PlannerMessage, None], reason: str) -> None:
        """Ask every worker with a step of this run in flight to cancel it."""
        message = CancelStep(run_id=self._run_id, reason=reason)
        for worker in set(self.inflight.values()):
            ref = self._team.worker_refs[worker]
            try:
                ref.send_nowait(message)
            except MailboxFull:  # never block the planner on a busy worker's mailbox
                ctx.start_soon(_send_quietly, ref, message)
            except ActorStopped:
                pass  # the team is stopping; the worker's steps stop with it


async def _send_quietly(ref: ActorRef[WorkerMessage, None], message: WorkerMessage) -> None:
    with contextlib.suppress(ActorStopped):
        await ref.send(message)
