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

from typing import final

import msgspec

from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._replay import Replay, of_attempt
from regiment.hierarchy._spent import Spent
from regiment.hierarchy._stalled_end import charge_replies
from regiment.hierarchy.run._calls import ROLES
from regiment.hierarchy.run._replies import Replayed, replayed_reply

__all__ = ("Replaying", "Unreplayed", "settle")

_ROLES: dict[str, str] = {str(k): v for k, v in ROLES.items()}  # by a call key's purpose


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
        cut, or failed, before it reached them); none of them can come round again."""
        replay, version, step_id, attempt = self._replay, *_attempt(report)
        keys = [
            k
            for k in replay.responses
            if k not in replay.taken and of_attempt(k, version, step_id, attempt)
        ]
        self._charge(keys)

    def settle(self) -> None:
        """The run ends: charge every journaled reply it never replayed."""
        self._charge([k for k in self._replay.responses if k not in self._replay.taken])

    def _charge(self, keys: list[str]) -> None:
        if keys:
            replay = self._replay
            replay.taken.update(keys)
            charge_replies(replay, self._spent, keys, lambda key: _role(replay, key))


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
