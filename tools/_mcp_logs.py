"""What an MCP server logs while it works (``notifications/message``: ``ctx.info(...)``
in a FastMCP tool), on the ``regiment.tools.mcp.server`` logger.

The SDK's ``ClientSession`` parses each message and hands it to its logging callback
(:meth:`ServerLogs.received`); without one it dropped them. A message names no call
on the wire (over stdio nothing could; over HTTP the SDK does not say which call's
stream brought it), so the calls in flight *as the message comes off the wire* stand
for it: the connection's reader takes that snapshot (:meth:`ServerLogs.wire_context`)
into the context the SDK runs the callback in (the ``last_context`` of its read
stream, which the SDK's stream protocol names for this). A message during exactly one
call is that call's: it is logged in the call's context (its run, step and worker,
its trace), and names the tool; one during several names them all.

A server's text is shown, not obeyed: control characters and line breaks are escaped,
and a long one is cut. A flood is bounded: at most :data:`LIMIT` records a minute per
call (and as many for what comes outside a single call); the rest are counted and
said in one WARNING when the call ends or the minute is over.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import anyio

from regiment._text import clipped, counted, visible

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream
    from mcp.shared.message import SessionMessage
    from mcp.types import LoggingMessageNotificationParams

__all__ = ("LIMIT", "LogBudget", "Noted", "ServerLogs", "WireContexts")

logger = logging.getLogger("regiment.tools.mcp.server")

# The MCP levels (RFC 5424's) as logging's.
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
LIMIT = 100
"""Records a minute logged per call (and for messages outside a single call)."""
_WINDOW = 60.0
_TEXT = 2000  # characters of one message logged; a longer one is cut, saying how long
_NAME = 100  # characters of the server's own logger name


class _Caller(Protocol):
    """What a log message needs of a call in flight (the connection's ``_Call``)."""

    @property
    def name(self) -> str: ...

    @property
    def logs(self) -> LogBudget: ...

    @property
    def local(self) -> contextvars.Context: ...


# The calls in flight when the message the callback runs for came off the wire.
_DURING: contextvars.ContextVar[tuple[_Caller, ...]] = contextvars.ContextVar(
    "regiment_mcp_log_during", default=()
)


@dataclass
class LogBudget:
    """How many records one call (or the rest) may still log this minute."""

    used: int = 0
    dropped: int = 0
    since: float = float("-inf")

    def admit(self, now: float) -> tuple[bool, int]:
        """Whether one more record may be logged at ``now``, and how many were dropped in
        the minute that just ended (to be said first)."""
        ended = 0
        if now - self.since >= _WINDOW:
            ended, self.used, self.dropped, self.since = self.dropped, 0, 0, now
        if self.used < LIMIT:
            self.used += 1
            return True, ended
        self.dropped += 1
        return False, ended

    def close(self) -> int:
        """How many were dropped and not said yet; none after this."""
        dropped, self.dropped = self.dropped, 0
        return dropped


class ServerLogs:
    """One connection's forwarding of its server's log messages."""

    def __init__(self, server: str, in_flight: Collection[_Caller]) -> None:
        self._server = server
        self._in_flight = in_flight  # the connection's calls sent and not answered, live
        self._rest = LogBudget()  # messages during no call, or during several

    def wire_context(self) -> contextvars.Context:
        """The context the callback of a message that just came off the wire runs in:
        which calls were in flight then."""
        context = contextvars.copy_context()
        context.run(_DURING.set, tuple(self._in_flight))
        return context

    async def received(self, params: LoggingMessageNotificationParams) -> None:
        """The session's logging callback: log the message (see the module's docs)."""
        during = _DURING.get()
        call = during[0] if len(during) == 1 else None
        budget = call.logs if call is not None else self._rest
        admitted, ended = budget.admit(anyio.current_time())
        tools = ", ".join(sorted({c.name for c in during}))
        if ended:
            self._dropped(ended, call, tools)
        if not admitted:
            return
        level = _LEVELS.get(str(params.level), logging.WARNING)
        if not logger.isEnabledFor(level):
            return
        source = f" [{_shown(params.logger, _NAME)}]" if params.logger else ""
        where = f" during tool {tools}" if call else ""
        if len(during) > 1:
            where = f" during one of {len(during)} calls ({tools})"
        extra: dict[str, object] = {"mcp_server": self._server, "mcp_level": str(params.level)}
        extra |= {"mcp_tool": call.name if call else None, "mcp_logger": params.logger}
        log = (level, "MCP server %r%s%s: %s", self._server, source, where, _text(params.data))
        if call is None:
            logger.log(*log, extra=extra)
        else:  # in the call's context: its run, step and worker, its span
            call.local.run(logger.log, *log, extra=extra)

    def ended(self, call: _Caller) -> None:
        """``call`` was answered: say what of its log messages was dropped."""
        dropped = call.logs.close()
        if dropped:
            self._dropped(dropped, call, call.name)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        """The session ended: say what was dropped and not said."""
        dropped = self._rest.close()
        if dropped:
            self._dropped(dropped, None, "")

    def _dropped(self, count: int, call: _Caller | None, tools: str) -> None:
        where = f" during tool {tools}" if call else ""
        log = (
            logging.WARNING,
            "MCP server %r sent %s%s that %s not logged: at most %d a "
            "minute are (a server that logs this much should log less, or to its own file)",
            self._server,
            counted(count, "log message"),
            where,
            "was" if count == 1 else "were",
            LIMIT,
        )
        if call is None:
            logger.log(*log, extra={"mcp_server": self._server})
        else:
            call.local.run(logger.log, *log, extra={"mcp_server": self._server})


def _text(data: object) -> str:
    """A message's data (any JSON value) as one line to show: a string as it is, else
    its JSON; cut, its control characters and line breaks escaped."""
    if not isinstance(data, str):
        data = json.dumps(data, ensure_ascii=False, default=str)
    return _shown(data, _TEXT)


def _shown(text: str, limit: int) -> str:
    return visible(clipped(text, limit)).replace("\n", "\\n")


Noted = tuple[contextvars.Context | None, "SessionMessage | Exception"]
"""A message off the wire, with the context the SDK is to handle it in (``None``: its own)."""


class WireContexts:
    """The session's read stream: the messages the reader passes on, each with the
    context it chose for it as ``last_context`` (the SDK's stream protocol reads it there,
    and runs the message's handler in it)."""

    def __init__(self, inner: MemoryObjectReceiveStream[Noted]) -> None:
        self._inner = inner
        self.last_context: contextvars.Context | None = None

    async def receive(self) -> SessionMessage | Exception:
        self.last_context, item = await self._inner.receive()
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> WireContexts:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WireContexts:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
