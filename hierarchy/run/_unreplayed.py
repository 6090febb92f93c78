"""The replies a resumed run's journal holds that the run never replayed, charged once.

A resume charges a journaled reply as it replays it: the planner side's as its call is
taken, a step's through the step's report, a committed step's through its journaled
report. A reply the resumed run never reaches (it is cancelled, fails, times out, or
its budget stops it first; a replan cuts the step before it gets there; a queued call
is dropped at the end) was paid all the same. So each replay marks its key
(``Replay.taken``); when a step's attempt reports, its journaled calls not taken are
charged then (the budget sees them from there on), and as the run ends, every one left
(``settle``), each to its role, so the run never counts less than its journal holds.

Charged at the end rather than all at the resume's start: the replay re-drives the run
through the same budget checks the run made, and a budget already holding every later
reply would refuse calls and shares the run had made, and the resume would go
otherwise than the run did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import final

import msgspec

from regiment.errors import UnknownRun
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._replay import Replay, ToolKey, of_attempt
from regiment.hierarchy._spent import Spent
from regiment.hierarchy._stalled_end import charge_journaled, charge_replies, runs_below
from regiment.hierarchy.run._calls import ROLES
from regiment.hierarchy.run._replies import Replayed, replayed_reply
from regiment.hierarchy.workers._team_worker import TeamWorker
from regiment.journal import Journal, nested_run_id, patient_reads
from regiment.models import Usage

__all__ = ("Replaying", "Unreplayed", "nested_journals", "settle")

_ROLES: dict[str, str] = {str(k): v for k, v in ROLES.items()}  # by a call key's purpose
_NESTED = "worker"  # (a step's worker is journaled with its dispatch: not used)


@final
class Unreplayed:
    """A resumed run's journaled replies (its ``replay``) not replayed yet, charged to its
    ledger's ``spent`` once the run cannot reach them any more."""

    __slots__ = ("_replay", "_spent")

    def __init__(self, replay: Replay, spent: Spent) -> None:
        self._replay, self._spent = replay, spent

    def took(self, key: str) -> None:
        """The planner took the replayed reply of its call ``key`` (it charged it)."""
        if key in self._replay.responses:
            self._replay.taken.add(key)

    def reported(self, report: StepReport) -> None:
        """A step's attempt reported: charge its journaled calls it never replayed (it was
        cut, or failed, before it reached them), its tool calls and, if a nested team served
        it, its run's journal if never taken up; none of them can come round again."""
        replay, version, step_id, attempt = self._replay, *_attempt(report)
        keys = [
            k
            for k in replay.responses
            if k not in replay.taken and of_attempt(k, version, step_id, attempt)
        ]
        self._charge(keys)
        self._charge_tools([k for k in replay.tool_keys() if k[:2] == (version, step_id)])
        if (below := replay.nested.pop((version, step_id, attempt), None)) is not None:
            self._charge_nested(report.worker, below)

    def settle(self) -> None:
        """The run ends: charge every journaled reply, tool call and nested run it never
        replayed."""
        replay = self._replay
        self._charge([k for k in replay.responses if k not in replay.taken])
        self._charge_tools(list(replay.tool_keys()))
        for (version, step_id, _), below in replay.nested.items():
            self._charge_nested(replay.workers.get((version, step_id), _NESTED), below)
        replay.nested.clear()

    def _charge(self, keys: list[str]) -> None:
        if keys:
            replay = self._replay
            replay.taken.update(keys)
            charge_replies(replay, self._spent, keys, lambda key: _role(replay, key))

    def _charge_tools(self, keys: list[ToolKey]) -> None:
        """Count the journaled tool calls ``keys`` not counted yet (their bodies ran, or
        began), each once, to the worker of their step."""
        replay = self._replay
        for key in keys:
            if key not in replay.tools_taken:
                replay.tools_taken.add(key)
                role = replay.workers.get(key[:2], _NESTED)
                self._spent.charge(role, Usage(), tool_calls=1)

    def _charge_nested(self, worker: str, below: list[tuple[str, Replay]]) -> None:
        """Charge what a nested team's run (and the runs below it) journaled, never taken
        up by this resume, to the team worker whose step it served (as its report would)."""
        spent = Spent()
        for run_id, replay in below:
            charge_journaled(replay, spent, run_id)
        self._spent.charge(worker, spent.total(), spent.model_calls, spent.tool_calls)
        self._spent.count_estimated(spent.estimated)


class Replaying:
    """What a resumed run replays from its journal instead of doing again: its
    planner-side replies and the reports of the steps it had committed (mixed into
    ``RunJournal``, whose slots hold the state)."""

    __slots__ = ()
    _replay: Replay | None  # (None: a new run's)
    _calls: dict[str, int]  # the planner-side replies so far, by purpose
    unreplayed: Unreplayed | None  # a resumed run's, once its ledger is known

    def replayed(self, purpose: str) -> Replayed | None:
        """The journaled reply of the next ``purpose`` call, if a resume has one."""
        if self._replay is None:
            return None
        return replayed_reply(self._replay, f"{purpose}/{self._calls.get(purpose, 0) + 1}")

    def took_nested(self, version: int, step_id: str, attempt: int) -> None:
        """The nested run serving attempt ``attempt`` of step ``step_id`` (plan version
        ``version``) is taken up again (or gave its journaled result): its report counts
        what it journaled."""
        if self._replay is not None:
            self._replay.nested.pop((version, step_id, attempt), None)

    def committed(self, assign: AssignStep) -> tuple[StepReport, int | None] | None:
        """The journaled report of a step committed before a resume, or dropped as stale
        (with the version then current): see :meth:`Replay.report_before`. It counts the
        calls of the attempt it came from: those are taken (not charged again)."""
        if self._replay is None:
            return None
        if (found := self._replay.report_before(assign.plan_version, assign.step.id)) is None:
            return None
        self._replay.take_attempt(assign.plan_version, assign.step.id, found[0].attempt)
        return msgspec.structs.replace(found[0], attempt=assign.attempt), found[1]


async def nested_journals(
    journal: Journal, run_id: str, replay: Replay, workers: Iterable[object]
) -> None:
    """Read into ``replay`` (resumed run ``run_id``'s) the journals of the runs of nested
    teams (its team's ``workers`` that are ``TeamWorker``) that served its steps, and of
    the runs below them: charged as it ends if it never takes them up again."""
    teams = {w.name for w in workers if isinstance(w, TeamWorker)}
    for version, step_id, attempt in replay.dispatched if teams else ():
        if replay.workers.get((version, step_id)) not in teams:
            continue
        nested = nested_run_id(run_id, version, step_id, attempt)
        try:
            with patient_reads():  # as the run's own read, it waits for a restarting server
                entries = await journal.read(nested)
        except UnknownRun:  # never begun
            continue
        below = await runs_below(journal, nested, entries)
        replay.nested[(version, step_id, attempt)] = [(nested, Replay.of(entries)), *below]


def settle(journal: Replaying | None) -> None:
    """A run (its ``journal``, if any) ends: if resumed, charge what it never replayed."""
    if journal is not None and journal.unreplayed is not None:
        journal.unreplayed.settle()


def _attempt(report: StepReport) -> tuple[int, str, int]:
    return report.plan_version, report.step_id, report.attempt


def _role(replay: Replay, key: str) -> str:
    """Whose call ``key`` was: its intent's role if journaled, else as its key says."""
    if (role := replay.roles.get(key)) is not None:
        return role
    head, _, rest = key.partition("/")
    if head == "step":
        version, _, rest = rest.partition("/")
        step_id = rest.partition("/")[0]
        if version.isdigit() and (worker := replay.workers.get((int(version), step_id))):
            return worker
    return _ROLES.get(head, "guardrail")  # (a planner-side judge's, with no intent)
