"""The tool calls of one model reply, run at once: a call that needs approval asks
only once its siblings are done working.

A run pauses when every step in flight waits for a decision, and a pause cancels
the steps. A step whose reply holds two calls, one working (a slow e-mail) and one
asking for approval, is not waiting: it has work under way. So a call's request
goes to its approver only when no sibling is working any more (each one either
finished or waits for a decision too); then a pause cancels nothing but waits.
The count lives in the step's progress, where the approval desk reads it: a call
decided while a sibling still waits works again (its body runs), so the step is
not just waiting until that body is done, and then its run looks again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import final

import anyio

from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import ToolCallPart
from regiment.tools import ApprovalDecision, ApprovalRequest, Approver, ask_approver

__all__ = ("SiblingCalls",)

_log = logging.getLogger("regiment.worker")


@final
class SiblingCalls:
    """The calls of one reply that are still working (not finished, not waiting).

    Args:
        calls: how many calls start together.
        progress: the step's, which keeps the count (``calls_working``).
    """

    __slots__ = ("_changed", "_progress")

    def __init__(self, calls: int, progress: StepProgress) -> None:
        self._progress = progress
        progress.calls_working = calls
        self._changed: anyio.Event | None = None

    async def run_all(
        self, call: Callable[[int, ToolCallPart], Awaitable[None]], parts: Sequence[ToolCallPart]
    ) -> None:
        """``call(index, part)`` for each of ``parts``, at once (each with :meth:`run`).

        Raises:
            Exception: the first failure of a call that failed its step (a guard's
                ``GuardrailError``, say), as one call alone raises it, not wrapped in an
                ``ExceptionGroup`` that names none of it; a group holding a cancellation
                or another ``BaseException`` passes on as it is.
        """
        try:
            async with anyio.create_task_group() as tg:
                for index, part in enumerate(parts):
                    tg.start_soon(self.run, call, index, part)
        except ExceptionGroup as group:
            raise _first(group) from None

    async def run(
        self, call: Callable[[int, ToolCallPart], Awaitable[None]], index: int, part: ToolCallPart
    ) -> None:
        """``call(index, part)``, one of the calls; once it ends it no longer works."""
        progress = self._progress
        try:
            await call(index, part)
        finally:
            progress.calls_working -= 1
            self._tell()
        if not progress.working() and progress.recheck is not None:
            await progress.recheck()  # the others (if any) wait: maybe nothing else goes on

    def held(self, approver: Approver | None) -> Approver | None:
        """``approver``, asked only once no sibling of the call is working."""
        if approver is None:
            return None
        ask, progress = approver, self._progress

        async def wait(request: ApprovalRequest, /) -> ApprovalDecision:
            progress.calls_working -= 1  # waiting, not working
            self._tell()
            try:
                while progress.calls_working > 0:
                    changed = self._changed = self._changed or anyio.Event()
                    await changed.wait()
                return await ask_approver(ask, request)
            finally:
                progress.calls_working += 1  # decided: the call works again (its body runs)

        return wait

    def _tell(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()


def _first(group: BaseExceptionGroup[Exception]) -> Exception:
    """The group's first failure; any other is logged, not lost unseen."""
    first, *others = group.exceptions
    for other in others:
        _log.warning("a sibling tool call failed too: %r", other, exc_info=other)
    return _first(first) if isinstance(first, BaseExceptionGroup) else first
