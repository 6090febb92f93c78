"""Tools a server lists that the SDK could not read, left out one by one.

The SDK checks a ``tools/list`` answer as a whole: one tool whose ``inputSchema``
has no ``"type"`` (say) makes it refuse the page, so none of the server's tools
could be used and the server would not start. The answers are checked here
first, on their way from the transport to the session: each tool the SDK would
refuse is taken out of the answer, with a WARNING naming it and why, and the rest
go on to the SDK's own ``list_tools``, which keeps its own per-tool state (output
schemas, header maps) from what it reads. Nothing else of the message changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from regiment._text import clipped

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from regiment.tools._mcp_server import MCPServer

__all__ = ("Listings", "list_again")

logger = logging.getLogger("regiment.tools.mcp")

_TOOLS_LIST = "tools/list"
_INITIALIZE = "initialize"
_SHOWN = 300
_RELIST_WAITS = (0.5, 1.0, 2.0)  # before each further try of a failed list


async def list_again(
    server: MCPServer, listing: Callable[[], Awaitable[None]], old_list_stands: Callable[[], None]
) -> bool:
    """List a server's tools again after ``notifications/tools/list_changed``; ``False``
    when the connection closed meanwhile (the connection is then restarted).

    Any other failure (an error answer, no answer within ``start_timeout``, a list that
    could not be read) keeps the tools listed before: calls waiting for the new list go on
    with them (``old_list_stands``), and the list is asked for again 0.5 s, 1 s and 2 s
    later. Restarting a server that still answers would cut the calls it is running and
    spend a restart; its next list_changed notification asks again."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    from regiment.tools._mcp_transport import failure_text

    for wait in (*_RELIST_WAITS, None):
        try:
            with anyio.fail_after(server.start_timeout):
                await listing()
            return True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            return False
        except Exception as exc:
            if isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED:
                return False
            why = failure_text(exc)
        old_list_stands()
        if wait is None:
            logger.error(
                "listing the tools of MCP server %r failed %d times (last: %s); its tools as "
                "listed before stay offered until it says its tools changed again",
                server.name,
                len(_RELIST_WAITS) + 1,
                why,
            )
            return True
        logger.warning(
            "listing the tools of MCP server %r failed (%s); its tools as listed before stay "
            "offered, and it is asked again in %g s",
            server.name,
            why,
            wait,
        )
        await anyio.sleep(wait)
    return True


class Listings:
    """One connection's ``tools/list`` requests in flight, and the tools left out of
    their answers (name → why) that ``include``/``exclude`` keep, for the connection to
    say at start."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self._asked: set[str | int] = set()  # ids of tools/list requests sent
        self._initialize: str | int | None = None
        self._version: str | None = None  # the protocol version the server answered
        self.left_out: dict[str, str] = {}

    def sent(self, method: str | None, request_id: str | int | None, params: object) -> None:
        """Note a request the session writes (a listing's first page starts ``left_out`` anew)."""
        if request_id is None:
            return
        if method == _TOOLS_LIST:
            self._asked.add(request_id)
            if not isinstance(params, dict) or params.get("cursor") is None:
                self.left_out.clear()
        elif method == _INITIALIZE:  # a new session: its ids start anew
            self._initialize, self._version = request_id, None
            self._asked.clear()

    def received(self, item: SessionMessage | Exception) -> None:
        """Look at a message the server sent before the session does; a ``tools/list``
        answer loses the tools the SDK would refuse."""
        from mcp.types.jsonrpc import JSONRPCError, JSONRPCResponse

        message = getattr(item, "message", None)
        if not isinstance(message, JSONRPCResponse | JSONRPCError) or message.id is None:
            return
        if message.id == self._initialize and isinstance(message, JSONRPCResponse):
            version = message.result.get("protocolVersion")
            self._version = version if isinstance(version, str) else None
        elif message.id in self._asked:
            self._asked.discard(message.id)
            if isinstance(message, JSONRPCResponse):
                tools = message.result.get("tools")
                if isinstance(tools, list) and tools:
                    kept = self._usable(tools)
                    if len(kept) != len(tools):
                        message.result = {**message.result, "tools": kept}

    def _usable(self, tools: list[object]) -> list[object]:
        from mcp_types import methods
        from pydantic import ValidationError

        version = self._version or "2025-11-25"  # the SDK's own fallback
        try:
            methods.validate_server_result(_TOOLS_LIST, version, {"tools": tools})
            return tools  # the usual case: one check for the page
        except ValidationError:
            pass
        except (KeyError, ValueError):
            return tools  # a version the SDK has no rules for: leave it to the SDK
        kept: list[object] = []
        for tool in tools:
            try:
                methods.validate_server_result(_TOOLS_LIST, version, {"tools": [tool]})
            except ValidationError as exc:
                self._leave_out(tool, exc)
            else:
                kept.append(tool)
        return kept

    def _leave_out(self, tool: object, exc: Exception) -> None:
        from pydantic import ValidationError

        name = tool.get("name") if isinstance(tool, dict) else None
        shown = name if isinstance(name, str) else clipped(repr(tool), 80)
        why = "not a valid MCP tool"
        if isinstance(exc, ValidationError) and exc.errors():
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"][2:])  # past ("tools", 0)
            why = f"{where or 'the tool'}: {first['msg']}"
        why = clipped(why, _SHOWN)
        if not self._server.keeps(shown):
            logger.debug(
                "MCP server %r: tool %r (excluded) unreadable: %s", self._server.name, shown, why
            )
            return
        self.left_out[shown] = why
        logger.warning(
            "MCP server %r: tool %r left out: the SDK cannot read its listing (%s); the "
            "server's other tools are used",
            self._server.name,
            shown,
            why,
        )
