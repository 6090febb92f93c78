"""One run's stale-step fence: which of its steps may still start a tool.

The planner decides in its own turn that a plan is over (a check disproved it and
it replans, the run pauses, is cancelled, or ends), and then sends each worker
with a step in flight a ``CancelStep``. That message reaches a busy worker only
when its actor reads its mail; meanwhile a step whose model has just answered
would start the tools it asked for, for a plan that is over. So the run also
holds this fence, which its in-process steps see by reference (through their
run's channel): the planner moves it the moment it decides, in its own task, and
a step's tool loop looks at it before it starts any tool. The messages then only
wind the steps down.

The fence also carries the run's ``TopUps`` (what a step whose share runs short draws
on): the one object of its run a step already holds, so a step that never needs a
top-up pays nothing for it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, final

from regiment.hierarchy._messages import PAUSING
from regiment.hierarchy._top_up import TopUps

if TYPE_CHECKING:
    from regiment.hierarchy._messages import AssignStep
    from regiment.hierarchy.workers._progress import StepProgress

__all__ = ("StepFence",)

_ALL = sys.maxsize  # no plan version of the run may start a tool any more


@final
class StepFence:
    """The plan versions of one run whose steps may still start a tool.

    A nested run's fence also holds when the fence of the run above holds the step
    the nested run serves (``above``): a cut there reaches the nested run's steps at
    once, whatever the nested team's planner and workers are busy with.

    Attributes:
        below: steps of a plan version below this start no tool (0: none is fenced).
        why: why the planner fenced them (the cut's reason), for the logs.
        above: a nested run's: the fence of the run above, and the plan version of the
            step the nested run serves.
        top_ups: what the run's steps draw on when their shares run short.
        calling: the run's in-process steps in flight that have called tools, by the
            id of their progress (made on the first): a replan lists the calls of
            those it cuts (``run._made_calls``); each leaves as it reports.
    """

    __slots__ = ("above", "below", "calling", "top_ups", "why")

    def __init__(self) -> None:
        self.below = 0
        self.why = ""
        self.above: tuple[StepFence, int] | None = None
        self.top_ups = TopUps()
        self.calling: dict[int, tuple[AssignStep, StepProgress]] | None = None

    def calls(self, assign: AssignStep, progress: StepProgress) -> None:
        """A step of the run starts its first tool calls: listed till it reports."""
        if (calling := self.calling) is None:
            calling = self.calling = {}
        calling[id(progress)] = (assign, progress)
        progress.listed = True

    def reported(self, progress: StepProgress) -> None:
        """A listed step has made its report: a replan no longer cuts it."""
        if self.calling is not None:
            self.calling.pop(id(progress), None)

    def in_flight(self, version: int) -> list[tuple[AssignStep, StepProgress]]:
        """The listed steps of plan version ``version``, in the order they first called."""
        if not self.calling:
            return []
        return [(a, p) for a, p in self.calling.values() if a.plan_version == version]

    def cut(self, version: int | None, why: str) -> None:
        """Fence the steps of ``version`` and older (``None``: every step, now and later)."""
        below = _ALL if version is None else version + 1
        if below > self.below:
            self.below, self.why = below, why

    def cancelled(self) -> bool:
        """Whether every step of the run is fenced for good, not for a pause: the run
        was cancelled and winds down (see ``close_run``); no call of it starts again."""
        return self.below == _ALL and self.why != PAUSING

    def holding(self, version: int) -> StepFence | None:
        """The fence (this one, or one above it) that holds a step of plan version
        ``version``: it must start no tool; ``None`` if none does."""
        fence: StepFence | None = self
        while fence is not None:
            if version < fence.below:
                return fence
            if fence.above is None:
                return None
            fence, version = fence.above
        return None
