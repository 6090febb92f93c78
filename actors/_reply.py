"""Where the reply to one ask lands."""

from __future__ import annotations

import contextlib
from typing import Generic, TypeVar

import anyio

from regiment.errors import AskTimeout

__all__ = ("ReplySlot",)

R = TypeVar("R")


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ReplySlot(Generic[R]):
    """A one-shot reply channel: written at most once, awaited by one asker."""

    __slots__ = ("_receive", "_send")

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[R | _Failure](1)

    def resolve(self, value: R) -> None:
        """Deliver the reply; a no-op if the asker has gone away."""
        # the asker may have left (timeout, cancellation): not the replier's problem
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(value)
        self._send.close()

    def fail(self, error: BaseException) -> None:
        """Deliver an error to the asker; a no-op if the asker has gone away."""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(_Failure(error))
        self._send.close()

    def abandon(self) -> None:
        """The ask was never delivered: release the slot."""
        self._send.close()
        self._receive.close()

    async def wait(self, recipient: str, message: object, timeout: float | None) -> R:  # noqa: ASYNC109
        """Wait for the reply; raise AskTimeout, or the error the handler raised."""
        with self._receive:
            with anyio.move_on_after(timeout if timeout is not None else float("inf")):
                outcome = await self._receive.receive()
                if isinstance(outcome, _Failure):
                    raise outcome.error
                return outcome
        raise AskTimeout(
            f"actor {recipient!r} did not answer {type(message).__name__} within {timeout} s;"
            " raise the timeout or check that the actor is not blocked"
        )
