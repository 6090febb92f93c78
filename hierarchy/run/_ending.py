"""How a run's planner ends its run: answered, finished, failed, aborted, or wound down
(what is in flight cut or drained first).

A part of :class:`~regiment.hierarchy.run._actor.PlannerActor`, kept here so the actor
stays a router: the changes still go through its one door, ``_record``. It is the
actor's first base, so its methods are found before the other parts' placeholders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from regiment.actors import Actor
from regiment.errors import RunError
from regiment.hierarchy._messages import PAUSING
from regiment.hierarchy._result import RunStatus
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._calls import PhaseCalls
from regiment.hierarchy.run._changes import RunAborted, RunFinished
from regiment.hierarchy.run._guarding import RunGuards
from regiment.hierarchy.run._messages import CancelRun, PlannerMessage
from regiment.hierarchy.run._phase import (
    Done,
    EndAnswered,
    EndCancelled,
    EndFailed,
    Ending,
    EndPartial,
    EndPaused,
    Phase,
    WindingDown,
)
from regiment.hierarchy.run._unreplayed import settle

if TYPE_CHECKING:
    from regiment.hierarchy.run._changes import RunChange

__all__ = ("EndsRun", "why_cancelled")


class EndsRun(Actor[PlannerMessage, None]):
    """The planner actor's ways to end its run (mixed into ``PlannerActor``)."""

    _book: RunBook
    _calls: PhaseCalls
    _guards: RunGuards
    _phase: Phase

    if TYPE_CHECKING:  # the actor's and its other parts' (no placeholder at run time)

        def _record(self, change: RunChange) -> None: ...

        def _drop_held(self, upto: int | None) -> None: ...

        def _note_guards(self) -> None: ...

        def _close(self, ending: EndPartial | EndPaused) -> None: ...

    def _finish_answer(self, text: str) -> None:
        partial = self._book.spending.exhausted is not None
        ending = EndAnswered(self._book.answer(text), "partial" if partial else "completed")
        if self._book.dispatcher.inflight:  # cancelled steps of older versions, still ending
            self._calls.stop()
            self._phase = WindingDown(ending)
        else:
            self._end_as(ending)

    def _finish(self, answer: str, status: RunStatus) -> None:
        self._end()
        self._record(RunFinished(answer, status))

    def _end(self) -> None:
        # (each only if there is something: a plain run's end pays two look-ups for both)
        if (log := self._guards.log).spent or log.notes:
            self._note_guards()  # what the guards' judges spent, handed over and not charged
        if (journal := self._book.channel.journal) is not None and journal.unreplayed is not None:
            settle(journal)  # resumed: the journaled replies never replayed
        self._drop_held(None)  # a resume that never reached the version a drop named
        self._phase = Done()
        self._calls.stop()
        self._guards.stop()

    def _fail(self, error: RunError) -> None:  # once every step in flight has reported
        self._wind_down(EndFailed(error))

    def _abort(self, error: RunError) -> None:  # now: what is in flight is cancelled
        self._book.dispatcher.cancel_all(self.ctx, "the run failed")
        self._end()
        self._record(RunAborted(error))

    def _wind_down(self, ending: Ending, *, drain: bool = False) -> None:
        """Cancel what is in flight (not if ``drain``); end as ``ending`` once all reported."""
        self._calls.supersede()
        self._guards.stop()
        self._phase = WindingDown(ending, drain)
        if not drain:
            self._book.dispatcher.cancel_all(self.ctx, _why_cut(ending))
        if not self._book.dispatcher.inflight:
            self._end_as(ending)

    def _end_as(self, ending: Ending) -> None:
        match ending:
            case EndCancelled(reason=reason):
                self._finish(f"cancelled: {reason}", "cancelled")
            case EndFailed(error=error):
                self._abort(error)
            case EndPartial() | EndPaused():
                self._close(ending)
            case EndAnswered(answer=answer, status=status):
                self._finish(answer, status)
            case _:
                assert_never(ending)


def _why_cut(ending: Ending) -> str:
    """Why a wind-down cuts the steps in flight: a pause's steps wait for decisions
    (they were not called off); any other ending's are cancelled."""
    return PAUSING if type(ending) is EndPaused else _ENDING


_ENDING = "the run is ending"


def why_cancelled(cancel: CancelRun) -> str:
    """Why a ``CancelRun`` cuts the run's steps: taken in the sender's task (the
    actor idle), its steps are cut at once, so none starts a tool while the message
    waits for the actor's turn; ``_handle`` then winds the run down."""
    return PAUSING if cancel.reason == PAUSING else _ENDING
