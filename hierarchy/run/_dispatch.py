"""Sending steps to workers: which steps are ready, each one's budget share, the
steps in flight by plan version, and cancelling them.

This is the per-step hot path: a report costs no pass over the whole plan. The
current version's steps are indexed once (which wait, which of them are ready,
who depends on whom); a commit then readies just the steps that waited on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, Hashable, Mapping, Sequence
from typing import final

from regiment.actors import ActorContext, ActorRef
from regiment.errors import ActorStopped, MailboxFull
from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._fence import StepFence
from regiment.hierarchy._messages import AssignStep, CancelStep, StepReport, WorkerMessage
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.run._changes import RunChange, StepSent
from regiment.hierarchy.run._fan_out import draw_to_start, reserve_fan_out, unsent_detail
from regiment.hierarchy.run._journaling import UNJOURNALED, RunJournal, Unjournaled
from regiment.hierarchy.run._messages import PlannerMessage
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._versions import PlanVersions
from regiment.telemetry import step_span_headers

__all__ = ("Dispatcher", "Replayed", "send_all", "send_now")

_NONE_RUNNING: dict[str, int] = {}


@final
class Dispatcher:
    """The steps of one run that are in flight, and the ones waiting to go."""

    def __init__(
        self,
        team: TeamRuntime,
        run_id: str,
        headers: Mapping[str, str],
        fence: StepFence | None = None,
    ) -> None:
        self._team = team
        self._run_id = run_id
        self._headers = headers
        # What the run's in-process steps look at before they start a tool (its channel's).
        self.fence = StepFence() if fence is None else fence
        self.inflight: dict[tuple[int, str, int], str] = {}  # (version, step, attempt) -> worker
        # inflight's step ids per plan version, with how many attempts of each are out.
        # It, ``indexed``, ``ready`` and ``dependents`` are read (never changed) by the
        # planner and the run's book on every report: an attribute, no call a step (#22).
        self.running: dict[int, dict[str, int]] = {}
        # The version the fields below are about (0: none yet; built on its first dispatch).
        self.indexed = 0
        # The current version's steps neither committed nor dispatched yet, in plan order.
        self._waiting: dict[str, PlanStep] = {}
        # Of those, the ones whose dependencies are all committed, in plan order; the
        # rest by how many of their dependencies are not, and who waits on each step.
        self.ready: dict[str, PlanStep] = {}
        self._blocked: dict[str, int] = {}
        self.dependents: dict[str, list[str]] = {}
        self._position: dict[str, int] = {}
        # A resume's replayed reports dropped as stale before it, each held (no longer in
        # flight) until the version its drop named is announced again: see ``hold``.
        self._held: list[tuple[StepReport, int]] = []

    def running_ids(self, version: int) -> Collection[str]:
        """Ids of the steps of ``version`` dispatched and not yet reported (read only)."""
        return self.running.get(version, _NONE_RUNNING)

    def unsent(self) -> int:
        """How many steps of the current plan are still to be sent."""
        return len(self._waiting)

    def waiting_on(self, key: Hashable) -> int:
        """How many of the current plan's steps still to be sent wait, directly or not, on
        the step in flight under ``key`` (``(version, step id, attempt)``; a top-up's)."""
        if not isinstance(key, tuple) or key[0] != self.indexed:
            return 0
        found: set[str] = set()
        todo = [key[1]]
        while todo:
            for dependent in self.dependents.get(todo.pop(), ()):
                if dependent not in found:
                    found.add(dependent)
                    todo.append(dependent)
        return sum(1 for step_id in found if step_id in self._waiting)

    def _index(self, versions: PlanVersions) -> None:
        """Index the current version's steps: which are waiting, which of them are ready."""
        committed, version = versions.committed, versions.version
        running = self.running_ids(version)
        self.indexed = version
        self._waiting = waiting = {}
        self.ready, self._blocked, self.dependents = {}, {}, {}
        self._position = {}
        for position, step in enumerate(versions.plan.steps):
            step_id = step.id
            self._position[step_id] = position
            if step_id in committed or step_id in running:
                continue
            waiting[step_id] = step
            unmet = 0
            for dep in step.depends_on:
                if dep not in committed:
                    unmet += 1
                    self.dependents.setdefault(dep, []).append(step_id)
            if unmet:
                self._blocked[step_id] = unmet
            else:
                self.ready[step_id] = step

    def committed(self, report: StepReport) -> None:
        """A step was committed (or kept as evidence): the steps waiting on it may be ready."""
        if report.plan_version != self.indexed:
            return  # not the indexed version: its index is built from what is committed
        unblocked = False
        for dependent in self.dependents.pop(report.step_id, ()):
            unmet = self._blocked[dependent] - 1
            if unmet:
                self._blocked[dependent] = unmet
                continue
            del self._blocked[dependent]
            if dependent in self._waiting:
                self.ready[dependent] = self._waiting[dependent]
                unblocked = True
        if unblocked and len(self.ready) > 1:  # keep plan order
            position = self._position.__getitem__
            self.ready = {sid: self.ready[sid] for sid in sorted(self.ready, key=position)}

    def next_sends(
        self, versions: PlanVersions, ledger: BudgetLedger, goal: str
    ) -> tuple[list[StepSent], tuple[BudgetLimit, str] | None]:
        """The ready steps to send now, each with its share of the budget reserved
        (see :mod:`._fan_out`); and, if the budget held some back, the budget field
        that did and the first step held back.

        Ready: the current plan's steps to dispatch now, in plan order, within the team's
        concurrency: not committed, not dispatched, every dependency committed (found
        here, not by a method of their own: a call a step, #22)."""
        if self.indexed != (version := versions.version):
            self._index(versions)
        if not self.ready:
            return [], None
        room = self._team.concurrency - len(self.running.get(version, _NONE_RUNNING))
        if room <= 0:
            return [], None
        ready = list(self.ready.values())
        if len(ready) > room:
            ready = ready[:room]
        team, run_id, pending = self._team, self._run_id, len(self._waiting)  # still to send
        for again in (False, True):
            sends, short_of = reserve_fan_out(
                team=team,
                versions=versions,
                ledger=ledger,
                run_id=run_id,
                goal=goal,
                ready=ready,
                pending=pending,
            )
            if again or short_of is None or sends or self.inflight:  # else: wait for them
                break
            # Nothing could start and nothing is in flight: a nested run draws what its
            # first ready step needs through its own step, as its calls do, and tries once more.
            step, top_ups = ready[0], self.fence.top_ups
            if not draw_to_start(
                team=team, versions=versions, ledger=ledger, top_ups=top_ups, goal=goal, step=step
            ):
                break
        return sends, None if short_of is None else (short_of, ready[len(sends)].id)

    def unsent_detail(
        self, versions: PlanVersions, ledger: BudgetLedger, goal: str, held: tuple[BudgetLimit, str]
    ) -> str:
        """Why the step ``next_sends`` held back could not be sent (the run ends on it)."""
        limit, step_id = held
        step = versions.step(step_id)
        return unsent_detail(
            team=self._team, versions=versions, ledger=ledger, goal=goal, step=step, limit=limit
        )

    def sent(self, assign: AssignStep, worker: str) -> None:
        """Record a step sent to ``worker``."""
        version, step_id = assign.plan_version, assign.step.id
        self.inflight[(version, step_id, assign.attempt)] = worker
        if self.indexed == version and self._waiting.pop(step_id, None) is not None:
            self.ready.pop(step_id, None)
        running = self.running.get(version)
        if running is None:  # (setdefault built a {} every step for nothing, #22)
            running = self.running[version] = {}
        running[step_id] = running.get(step_id, 0) + 1

    def reported(self, report: StepReport) -> None:
        """Record that a dispatched step has reported (or will never report)."""
        version, step_id = report.plan_version, report.step_id
        if self.inflight.pop((version, step_id, report.attempt), None) is None:
            return
        running = self.running[version]
        if running[step_id] == 1:
            del running[step_id]
        else:
            running[step_id] -= 1

    def hold(self, report: StepReport, current: int) -> None:
        """Keep a replayed ``report`` the run dropped as stale before its resume, naming
        version ``current``, until the resumed run has replaced its version and announced
        ``current`` (``held``). It ended before the resume, so the run's end does not wait
        for it; but it holds its slot of the team's concurrency, as it did before."""
        self.inflight.pop((report.plan_version, report.step_id, report.attempt), None)
        self._held.append((report, current))

    def held_of(self, version: int) -> list[StepReport]:
        """The held reports (see ``hold``) of plan version ``version`` that made tool calls:
        a resumed run's replan lists their calls, as the run's did (``_made_calls``)."""
        return [r for r, _ in self._held if r.plan_version == version and r.tool_outcomes]

    def held(self, upto: int | None) -> list[tuple[StepReport, int]]:
        """The held reports (see ``hold``) due once version ``upto`` is adopted (all:
        ``None``), let go, their slots freed."""
        if not self._held:
            return []
        due: list[tuple[StepReport, int]] = []
        waiting, self._held = self._held, []
        for report, current in waiting:
            if upto is None or (current <= upto and report.plan_version < upto):
                due.append((report, current))
                running = self.running[report.plan_version]
                running[report.step_id] -= 1
                if not running[report.step_id]:
                    del running[report.step_id]
            else:
                self._held.append((report, current))
        return due

    def cancel_all(self, ctx: ActorContext[PlannerMessage, None], reason: str) -> None:
        """Fence every step of this run sent so far, now: none of them starts a tool
        from here on, even while its worker is busy (``StepFence``); then ask every
        worker with a step of this run in flight to cancel it."""
        sent = max((version for version, _, _ in self.inflight), default=0)
        self.fence.cut(max(sent, self.indexed), reason)
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


async def send_all(
    sends: list[StepSent],
    record: Callable[[RunChange], None],
    journal: RunJournal | Unjournaled,
    refs: Mapping[str, ActorRef[WorkerMessage, None]],
    headers: Mapping[str, str],
) -> list[tuple[StepReport, int | None]]:
    """Record and send each step; a step committed (or dropped as stale: with the version
    then current) before a resume is not sent again: its journaled report is returned."""
    replayed, rest = send_now(sends, record, journal, refs, headers)
    return replayed if rest is None else await rest


Replayed = list[tuple[StepReport, int | None]]  # journaled reports of steps not sent again


def send_now(
    sends: Sequence[StepSent],
    record: Callable[[RunChange], None],
    journal: RunJournal | Unjournaled,
    refs: Mapping[str, ActorRef[WorkerMessage, None]],
    headers: Mapping[str, str],
    replayed: Replayed | None = None,
) -> tuple[Replayed, Awaitable[Replayed] | None]:
    """``send_all`` with no wait while each worker's mailbox has room (the usual case: no
    coroutine, no checkpoint, #22): the journaled reports so far (added to ``replayed``),
    and what sends the rest once a mailbox is full (``None``: all went)."""
    replayed = [] if replayed is None else replayed
    committed = None if journal is UNJOURNALED else journal.committed
    for index, sent in enumerate(sends):
        report, given = None if committed is None else committed(sent.assign), headers
        if report is None and committed is not None and headers:  # journaled, traced, sent:
            span, given = step_span_headers(headers)  # its span's id is journaled too
            sent = StepSent(sent.assign, sent.worker, span)
        record(sent)
        if report is not None:
            replayed.append(report)
        else:
            try:
                refs[sent.worker].send_nowait(sent.assign, headers=given)
            except MailboxFull:  # recorded: it waits for room, then the rest go in order
                rest = (sends[index:], given)  # (the first recorded already, with its headers)
                return replayed, _send_rest(rest, record, journal, refs, headers, replayed)
    return replayed, None


async def _send_rest(
    rest: tuple[Sequence[StepSent], Mapping[str, str]],
    record: Callable[[RunChange], None],
    journal: RunJournal | Unjournaled,
    refs: Mapping[str, ActorRef[WorkerMessage, None]],
    headers: Mapping[str, str],
    replayed: Replayed,
) -> Replayed:
    sends, first = rest  # first: the headers the first was recorded with
    await refs[sends[0].worker].send(sends[0].assign, headers=first)  # waits for room
    replayed, then = send_now(sends[1:], record, journal, refs, headers, replayed)
    return replayed if then is None else await then
