"""A journaled, traced run's step spans, let out for export as the journal commits their
reports (``telemetry.HeldEnds``: why they wait).

``RunJournal`` tells :class:`HeldSteps` of each record as it is noted (a dispatch: its
span is expected) and appended (with its sequence number); the journal tells it of each
commit of the run's records (``watch_commits``). As the run lets go of the journal, the
spans still held go out but, when the journal failed, those whose dispatch it holds with
no report: the resume ends them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, final

from regiment.journal import Record, StepDispatched, StepReported

if TYPE_CHECKING:
    from regiment.hierarchy.run._journaling import RunJournal
    from regiment.telemetry import HeldEnds

__all__ = ("HeldSteps", "held_steps")


def held_steps(journal: RunJournal, ends: HeldEnds) -> HeldSteps | None:
    """The held step spans of the run ``journal`` records (``ends``: its team's
    ``telemetry.step_ends``); ``None`` when that journal does not tell of its commits
    (not one of ours): then nothing is held."""
    watch = getattr(journal.store, "watch_commits", None)
    if watch is None:
        return None
    held = HeldSteps(ends, lambda told: watch(journal.lease, told))
    watch(journal.lease, held.committed)
    return held


_Key = tuple[int, str, int]  # a step's plan version, id and attempt


@final
class HeldSteps:
    """One run's held step spans (``ends``: its team's ``Telemetry.step_ends``)."""

    __slots__ = ("_all", "_appended", "_committed", "_ends", "_kept", "_spans", "_watch")

    def __init__(
        self, ends: HeldEnds, watch: Callable[[Callable[[int], None] | None], None]
    ) -> None:
        self._ends = ends
        self._watch = watch  # (None: the journal tells it of its commits no more)
        self._spans: dict[_Key, str] = {}  # dispatched, by step: its span's id
        self._all: set[str] = set()  # every span this run expects and has not let go of
        # Appended, not yet known committed: (its sequence number, span, a report's?).
        self._appended: deque[tuple[int, str, bool]] = deque()
        self._committed = 0  # the run's last record a commit wrote
        self._kept: set[str] = set()  # dispatches committed whose reports are not

    def noted(self, record: Record) -> None:
        """A record is about to be buffered: a step sent with a span is expected."""
        if isinstance(record, StepDispatched) and record.span is not None:
            self._spans[(record.plan_version, record.step_id, record.attempt)] = record.span
            self._all.add(record.span)
            self._ends.expect(record.span)

    def appended(self, records: Sequence[Record], seqs: Sequence[int]) -> None:
        """``records`` were appended, as numbers ``seqs``."""
        for record, seq in zip(records, seqs, strict=True):
            if isinstance(record, StepDispatched) and record.span is not None:
                self._appended.append((seq, record.span, False))
            elif isinstance(record, StepReported):
                key = (record.plan_version, record.step_id, record.attempt)
                if (span := self._spans.pop(key, None)) is not None:
                    self._appended.append((seq, span, True))
        self.committed(self._committed)  # (a durable append's commit told before this)

    def committed(self, seq: int) -> None:
        """A commit wrote the run's records up to number ``seq``."""
        self._committed = max(self._committed, seq)
        appended, released = self._appended, []
        while appended and appended[0][0] <= self._committed:
            _, span, reported = appended.popleft()
            if reported:
                self._kept.discard(span)
                self._all.discard(span)
                released.append(span)
            else:
                self._kept.add(span)
        if released:
            self._ends.release(released)

    def let_go(self, failed: bool) -> None:
        """The run lets go of the journal (``failed``: it could not write all of it)."""
        self._watch(None)
        dropped = self._kept if failed else set()
        self._ends.drop(dropped)
        self._ends.release(self._all - dropped)
        self._all, self._kept = set(), set()
