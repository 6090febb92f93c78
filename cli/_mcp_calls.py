"""The ``run``/``resume`` calls ``regiment mcp`` has in flight, so that they end with
their client or with the server.

A stop of the server cancels them all (:meth:`Calls.cancel`). Over HTTP, a call's
answer goes back on the response to the POST that brought it, and this server keeps
no event store, so a client that drops that response (it crashed, its connection
broke, it closed without cancelling) can never have the answer: the call is
cancelled too, and its run ends ``cancelled`` instead of working (and paying for model
calls) for nobody. The HTTP side marks each POST (:class:`Posted`, a context variable
the SDK hands on to the tool call it brings, as it does for any ASGI middleware's
context) and tells it when its client left before the answer was sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from contextvars import ContextVar, Token
from typing import final

import anyio
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError

__all__ = ("Calls", "Posted")

logger = logging.getLogger("regiment.mcp")


@final
class Posted:
    """One HTTP request (a POST) of a client, while it is served: inside ``with``, the
    calls it brings are its; :meth:`left` cancels them."""

    def __init__(self) -> None:
        self.scopes: set[anyio.CancelScope] = set()  # of the calls it brought
        self.gone = False
        self._token: Token[Posted | None] | None = None

    def left(self) -> None:
        """The client went away before its answer was sent: cancel the calls it brought."""
        self.gone = True
        for scope in list(self.scopes):
            scope.cancel()

    def __enter__(self) -> Posted:
        self._token = _POSTED.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _POSTED.reset(self._token)


_POSTED: ContextVar[Posted | None] = ContextVar("regiment_mcp_posted", default=None)


@final
class Calls:
    """The tool calls in flight, so that a stop of the server cancels them: their runs
    end ``cancelled`` (journaled so), and each call ends with an error that says so.
    A call whose HTTP client went away is cancelled alike (see the module's docs)."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._owed: set[str] = set()  # ids of calls cut short whose answer is not written
        self._changed = anyio.Event()
        self._stopping = False

    @contextlib.contextmanager
    def cut_short(self, request_id: str | None = None) -> Iterator[None]:
        """Inside, the call is cancelled when the server stops, or its HTTP client goes
        away (an ``SDKToolError``); with its JSON-RPC ``request_id``, the stop waits until
        its answer is written."""
        posted = _POSTED.get()
        with anyio.CancelScope() as scope:
            if self._stopping or (posted is not None and posted.gone):
                scope.cancel()
            self._scopes.add(scope)
            if posted is not None:
                posted.scopes.add(scope)
            try:
                yield
            finally:
                self._scopes.discard(scope)
                if posted is not None:
                    posted.scopes.discard(scope)
                self._changed.set()
        if scope.cancelled_caught:
            if posted is not None and posted.gone and not self._stopping:
                logger.info(
                    "a client went away during its call %s: its run was cancelled", request_id
                )
                raise SDKToolError("the client went away: the run was cancelled")
            if request_id is not None:
                self._owed.add(request_id)
            raise SDKToolError(
                "the server is stopping: the run was cancelled (a cancelled run is over; "
                "call run again once the server is back)"
            )

    def cancel(self) -> None:
        """Cancel every call in flight, and any that comes later."""
        self._stopping = True
        for scope in list(self._scopes):
            scope.cancel()

    def written(self, message: str) -> None:
        """The transport wrote ``message``, a JSON-RPC line: the answer to a call cut
        short, perhaps."""
        if not self._owed:
            return
        with contextlib.suppress(ValueError, AttributeError):
            self._owed.discard(str(json.loads(message).get("id")))
            self._changed.set()

    def unheard(self, request_id: str | None = None) -> None:
        """The client cancelled the call ``request_id`` (``None``: the client is gone):
        no answer is owed to it any more."""
        if request_id is None:
            self._owed.clear()
        else:
            self._owed.discard(request_id)
        self._changed.set()

    async def answered_all(self) -> None:
        """Once every call in flight has ended and the answers of those the stop cut
        short are written."""
        while self._scopes or self._owed:
            await self._changed.wait()
            self._changed = anyio.Event()
