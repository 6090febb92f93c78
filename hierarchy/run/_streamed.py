"""What ``RunningTeam.stream(goal)`` and ``resume_stream(run_id)`` return: one run's
events, to enter once.

It was an ``@asynccontextmanager``, which a second ``async with`` of the same object
failed with Python's own ``AttributeError: '_AsyncGeneratorContextManager' object has
no attribute 'args'``. A class also costs a streamed run a generator and three calls less.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, final

from regiment._misuse import EnterFirst, Misused, WrongType
from regiment.hierarchy.run._channel import RunEnd, RunEvents
from regiment.hierarchy.run._resume import Opened

__all__ = ("Streamed", "ready")

Opens = Callable[[], Awaitable[AbstractAsyncContextManager[Opened]]]


@final
class Streamed(EnterFirst):
    """An async context manager: entering it starts (or resumes) its run and yields
    its events (``RunEvents``); leaving it ends the run (see ``RunningTeam.stream``).

    A stream is one run, so it is entered once: a second ``async with`` of it raises
    a ``ConfigError`` (also a ``RuntimeError``) saying to call ``stream(goal)`` again for
    another run. Asked for what its events have (``running.stream(goal).ending``), it
    raises a ``ConfigError`` (also an ``AttributeError``) saying to enter it (``EnterFirst``).
    """

    after = " (the block owns the run: leaving it early cancels the run)"
    __slots__ = ("_again", "_checkpoint", "_opened", "_opens")

    def __init__(
        self, opens: Opens, checkpoint_if_cancelled: Callable[[], Awaitable[None]], again: str
    ) -> None:
        self._opens: Opens | None = opens  # None once entered
        self._checkpoint = checkpoint_if_cancelled
        self._again = again  # how the caller starts another, e.g. "running.stream(goal)"
        self._opened: AbstractAsyncContextManager[Opened] | None = None

    async def __aenter__(self) -> RunEvents:
        opens = self._opens
        if opens is None:
            raise Misused(
                f"this stream was entered already: a stream is one run, read once; "
                f"call {self._again} again (and enter what it returns) for another run"
            )
        self._opens = None
        opened = await opens()
        channel, events = await opened.__aenter__()
        self._opened = opened
        assert not isinstance(events, RunEnd)  # a streamed run has no lender
        return RunEvents(events, self._checkpoint, channel)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        opened, self._opened = self._opened, None
        assert opened is not None  # only entered ones are left
        return await opened.__aexit__(kind, error, traceback)

    if not TYPE_CHECKING:  # for the run-time error only: type checkers refuse these uses as is

        def __aiter__(self):
            raise self._misused("async for event in")

        def __await__(self):
            raise self._misused("await")

        def __enter__(self):
            raise self._misused("with")

        def __exit__(self, *exc_info):  # Python looks for it before it calls __enter__
            return None

    def entry(self) -> tuple[str, str]:
        """How the caller made it (``running.stream(goal)``), and what it yields."""
        return self._again, "events"

    def _misused(self, how: str) -> WrongType:
        """``async for event in running.stream(goal)`` (as other libraries' streams are
        read) failed with Python's own "'async for' requires an object with __aiter__
        method, got Streamed"; nothing has started then. A ``ConfigError`` (the code is
        to fix), also the ``TypeError`` it was."""
        return WrongType(
            f"`{how} {self._again}` does not read a stream: enter it with `async with "
            f"{self._again} as events:`, then `async for event in events:` inside the block "
            "(the block owns the run: leaving it early cancels the run)"
        )


async def ready(
    make: Callable[[], AbstractAsyncContextManager[Opened]],
) -> AbstractAsyncContextManager[Opened]:
    """What ``make`` makes, as ``Opens`` gives it (a resumed run's is made at once)."""
    return make()
