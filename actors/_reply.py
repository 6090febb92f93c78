"""Where the reply to one ask lands: a one-shot slot, not a stream per ask."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

from regiment.errors import AskTimeout

if TYPE_CHECKING:
    from regiment.actors._wakeup import Wakeup

__all__ = ("ReplySlot",)

R = TypeVar("R")

_PENDING, _RESOLVED, _FAILED, _ABANDONED = range(4)


class ReplySlot(Generic[R]):
    """A one-shot reply channel: written at most once, awaited by one asker.

    A wake-up plus a field is all an ask needs; a memory object stream per ask
    cost a stream pair, two close calls and extra checkpoints. Writes after the
    asker has gone (timeout, cancellation) are dropped: that is not an error
    for the replier.
    """

    __slots__ = ("_outcome", "_state", "_wakeup")

    def __init__(self, wakeup: Wakeup) -> None:
        self._wakeup = wakeup
        self._state = _PENDING
        self._outcome: object = None

    def resolve(self, value: R) -> None:
        """Deliver the reply (dropped if the asker has gone away)."""
        if self._state == _PENDING:
            self._state = _RESOLVED
            self._outcome = value
            self._wakeup.wake()

    def fail(self, error: BaseException) -> None:
        """Deliver an error to the asker (dropped if the asker has gone away)."""
        if self._state == _PENDING:
            self._state = _FAILED
            self._outcome = error
            self._wakeup.wake()

    def abandon(self) -> None:
        """The asker gives up; later replies are dropped."""
        if self._state == _PENDING:
            self._state = _ABANDONED

    async def wait(self, recipient: str, message: object, timeout: float | None) -> R:  # noqa: ASYNC109
        """Wait for the reply; raise AskTimeout, or the error the handler raised."""
        try:
            if timeout is None:
                await self._wakeup.wait()
            else:
                with anyio.move_on_after(timeout):
                    await self._wakeup.wait()
        finally:
            self.abandon()
        if self._state == _RESOLVED:
            return self._outcome  # type: ignore[return-value]  # set by resolve(value: R)
        if self._state == _FAILED:
            assert isinstance(self._outcome, BaseException)
            raise self._outcome
        raise AskTimeout(
            f"actor {recipient!r} did not answer {type(message).__name__} within {timeout:g} s;"
            " give ask() a longer timeout or check what the actor is waiting for"
        )
