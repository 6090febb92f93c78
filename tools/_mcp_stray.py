"""Messages from a server that the client cannot read, and lines that are no message.

A stdio server whose code prints (a banner, a debug ``print()`` in a tool) writes
lines to stdout that are not JSON-RPC in between its messages. Such a line cannot be any call's
answer: an answer is a JSON object (a batch, an array), so the calls in flight go
on waiting for theirs, which follow. The line is dropped (the SDK has logged it),
with one WARNING per connection that says what to fix; later ones are DEBUG. Over
HTTP nothing is told apart: an event that is no message may be all a call's stream has.
"""

from __future__ import annotations

import logging

from regiment._text import clipped
from regiment.tools._mcp_server import MCPServer, StdioTransport

__all__ = ("StrayOutput", "unreadable_text")

logger = logging.getLogger("regiment.tools.mcp")


class StrayOutput:
    """Tells the lines that are no MCP message from unreadable messages, for one stdio
    server (over HTTP, an event that is no message may be all a call's stream brings)."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server.name
        self._stdio = isinstance(server.transport, StdioTransport)
        self._warned = False

    def ignored(self, exc: Exception) -> bool:
        """Whether ``exc`` (a message the SDK could not read) is a line that is not
        JSON-RPC at all, so no call's answer: it is logged and ignored."""
        from pydantic import ValidationError

        if not self._stdio or not isinstance(exc, ValidationError):
            return False
        errors = exc.errors(include_url=False)
        line = errors[0].get("input") if errors and errors[0]["type"] == "json_invalid" else None
        if not isinstance(line, str) or line.lstrip()[:1] in ("{", "["):
            return False  # could be an answer the client cannot read
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        logger.log(
            level,
            "MCP server %r wrote a line to stdout that is not an MCP message, ignored (%r); "
            "a stdio server must write only MCP messages to stdout (its logs go to stderr)",
            self._server,
            clipped(line, 200),
        )
        return True


def unreadable_text(server: str, exc: Exception) -> str:
    """The error of each call in flight when ``server`` sent a message the SDK could not
    read (``exc``), which may have been its answer; logged once as a WARNING."""
    text = " ".join(line.strip() for line in str(exc).splitlines())
    detail = f"{type(exc).__name__}: {text[:200]}{'...' if len(text) > 200 else ''}"
    message = (
        f"MCP server {server!r} sent a message that could not be read ({detail}); it may "
        "have been this call's answer, so the call failed. Check what the server's tool returns"
    )
    logger.warning("%s", message)
    return message
