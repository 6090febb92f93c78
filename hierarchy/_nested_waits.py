"""Which steps wait for a human's decision, and whether a nested run has nothing else
to do but wait.

A call of a nested team's step that waits for approval is the top-level run's
request (its run pauses, its human decides), but the top run cannot see the nested
run's other steps. It must not pause while one of them still works: that would cut
the working step, and a resume would do it again. So the desk keeps here which steps
(of any run) have a call waiting on it, and each nested run's view of its steps in
flight; a top-level step served by a nested run counts as waiting only when every
step that nested run has in flight waits (itself, or through a run nested deeper).
A step of any run whose call waits while another call of it works (decided while its
sibling still waits, its body running) does not count as waiting either.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Protocol, TypeAlias, final

__all__ = ("InFlight", "NestedWaits", "StepCalls")

At: TypeAlias = tuple[str, int, str]  # (run id, plan version, step id): a StepAt

InFlight: TypeAlias = Callable[[], Collection[tuple[int, str, int]] | None]
"""A run's steps in flight, as (plan version, step id, attempt); ``None`` while the run
is not executing its plan (it plans, synthesizes, ends: it is not just waiting)."""


class StepCalls(Protocol):
    """What the desk reads of a step whose call waits (the worker's ``StepProgress``)."""

    waking: int  # calls decided that are about to work again
    recheck: Callable[[], Awaitable[None]] | None  # its run looks again (set by the desk)

    def working(self) -> bool:
        """Whether a call of the step works."""
        ...


@final
class NestedWaits:
    """The steps with calls waiting for decisions, and the nested runs' steps in flight."""

    __slots__ = ("_calls", "_children", "_runs", "waiting")

    def __init__(self) -> None:
        self.waiting: dict[At, int] = {}  # a step -> how many of its calls wait on the desk
        self._calls: dict[At, StepCalls] = {}  # a step with calls waiting -> its calls
        self._runs: dict[str, tuple[At, InFlight]] = {}  # nested run -> its parent, its steps
        self._children: dict[At, str] = {}  # a step -> the nested run serving it

    def link(self, run_id: str, parent: At, inflight: InFlight) -> None:
        """Nested run ``run_id`` serves ``parent``'s step; ``inflight`` tells its steps."""
        self._runs[run_id] = (parent, inflight)
        self._children[parent] = run_id

    def unlink(self, run_id: str) -> None:
        """The nested run ended."""
        linked = self._runs.pop(run_id, None)
        if linked is not None and self._children.get(linked[0]) == run_id:
            del self._children[linked[0]]

    def hold(self, at: At, calls: StepCalls | None = None) -> None:
        """A call of ``at``'s step waits on the desk (``calls``: the step's, if known)."""
        self.waiting[at] = self.waiting.get(at, 0) + 1
        if calls is not None:
            self._calls[at] = calls

    def release(self, at: At) -> None:
        """A call of ``at``'s step no longer waits (decided, expired or cut)."""
        left = self.waiting.get(at, 0) - 1
        if left > 0:
            self.waiting[at] = left
        else:
            self.waiting.pop(at, None)
            self._calls.pop(at, None)

    def busy(self, at: At) -> bool:
        """Whether ``at``'s step has work going on though a call of it may wait: another
        call of it works, or a nested run serving it still has work going on."""
        calls = self._calls.get(at)
        if calls is not None and calls.working():
            return True
        child = self._children.get(at)
        return child is not None and not self.stalled(child)

    def stalled(self, run_id: str) -> bool:
        """Whether nested run ``run_id`` executes its plan and every step it has in flight
        waits for a decision (its own call's, or a run's nested in it)."""
        linked = self._runs.get(run_id)
        steps = None if linked is None else linked[1]()
        if not steps:
            return False
        for version, step_id, _ in steps:
            at = (run_id, version, step_id)
            if self.busy(at) or (at not in self.waiting and at not in self._children):
                return False
        return True

    def nested(self, run_id: str) -> bool:
        """Whether ``run_id`` is a nested run this desk knows."""
        return run_id in self._runs
