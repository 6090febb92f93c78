"""When a lost MCP server is started (or connected to) again, when to give up, and
what the messages say.

A *restart* is spent when a session that was up breaks: ``max_restarts`` of
them per running team. Bringing the server back may take several attempts (an
HTTP server being redeployed refuses connections for a while): the first comes
at once, the next ones 0.5 s, 1 s, 2 s, ... (at most 8 s) apart, for up to
``start_timeout`` seconds after the break. Failed attempts spend no restarts,
so a reconnect loop that fails fast cannot use them all up in milliseconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple, final

import anyio

from regiment.tools._mcp_server import MCPServer, StdioTransport

__all__ = ("Restarts", "Verbs", "not_started", "verbs")

logger = logging.getLogger("regiment.tools.mcp")

FIRST_DELAY = 0.5
MAX_DELAY = 8.0


class Verbs(NamedTuple):
    """How messages say what is done to bring a server up."""

    start: str  # "could not be started"
    done: str  # "was already restarted 3 times"
    doing: str  # "restarting it"


def verbs(server: MCPServer) -> Verbs:
    """A process is started; a server at a URL is only connected to."""
    if isinstance(server.transport, StdioTransport):
        return Verbs("started", "restarted", "restarting")
    return Verbs("connected to", "reconnected", "reconnecting")


def not_started(server: MCPServer, reason: str) -> str:
    """Why ``Team.start()`` failed: the server could not be started (or connected to)."""
    where = server.transport.describe()
    named = f"MCP server {server.name!r}" + ("" if server.name == where else f" ({where})")
    return f"{named} could not be {verbs(server).start}: {reason}"


@final
class Restarts:
    """The restart budget and backoff of one server's connection.

    Args:
        server: its ``max_restarts`` and ``start_timeout``.
        clock: seconds, monotonic (the event loop's clock by default).
    """

    def __init__(self, server: MCPServer, clock: Callable[[], float] = anyio.current_time) -> None:
        self._server = server
        self._clock = clock
        self._used = 0
        self._delay = 0.0
        self._until = 0.0  # when attempts to bring the server back stop

    @property
    def used(self) -> int:
        """Restarts spent: sessions that were up and broke, and were brought back or tried."""
        return self._used

    @property
    def left(self) -> bool:
        """Whether another break would be restarted."""
        return self._used < self._server.max_restarts

    def broke(self) -> bool:
        """A session that was up broke: spend a restart (``True``), or none is left."""
        if not self.left:
            return False
        self._used += 1
        self._delay = 0.0
        self._until = self._clock() + self._server.start_timeout
        return True

    def failed(self) -> float | None:
        """An attempt to bring the server back failed: seconds to wait before the next,
        or ``None`` once ``start_timeout`` has passed since the break."""
        left = self._until - self._clock()
        if left <= 0:
            return None
        self._delay = FIRST_DELAY if self._delay == 0 else min(self._delay * 2, MAX_DELAY)
        return min(self._delay, left)

    def after_loss(self, reason: str, *, was_up: bool) -> float | str:
        """A session broke (``was_up``) or an attempt failed: seconds to wait before the
        next attempt, or why the server's tools are gone for good (logged either way)."""
        name, doing = self._server.name, verbs(self._server).doing
        if was_up and self.broke():
            logger.warning("MCP server %r stopped (%s); %s it", name, reason, doing)
            return 0.0
        wait = None if was_up else self.failed()
        if wait is not None:
            logger.warning("MCP server %r: %s failed (%s); again in %gs", name, doing, reason, wait)
            return wait
        gone = self.exhausted(reason) if was_up else self.timed_out(reason)
        logger.error("%s", gone)
        return gone

    def lost_mid_call(self) -> str:
        """What a call whose connection broke under it says."""
        server = self._server
        start = verbs(server).start
        lost = (
            f"the connection to MCP server {server.name!r} broke during the call (the server "
            "may have crashed); "
        )
        if self.left:
            return f"{lost}it is {start} again for the next call"
        return (
            f"{lost}it is not {start} again (max_restarts={server.max_restarts}, all used), "
            "so its tools are unavailable until the team restarts"
        )

    def exhausted(self, reason: str) -> str:
        """Why the server's tools are gone for good: its restarts are used up."""
        server = self._server
        return (
            f"MCP server {server.name!r} stopped ({reason}) and was already "
            f"{verbs(server).done} {self._used} times (max_restarts={server.max_restarts}); "
            "its tools are unavailable until the team restarts"
        )

    def timed_out(self, reason: str) -> str:
        """Why the server's tools are gone for good: it did not come back in time."""
        server = self._server
        return (
            f"MCP server {server.name!r} stopped and could not be {verbs(server).done} "
            f"within start_timeout={server.start_timeout:g}s (last attempt: {reason}); "
            "its tools are unavailable until the team restarts"
        )
