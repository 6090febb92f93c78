"""What a streamable-HTTP MCP server's failed answers mean for the user.

The SDK turns every HTTP error status into a bare "Server returned an error response"
(or "Not Found"), and a connection nobody accepts into httpx's "All connection attempts
failed"; the status, and which of these it was, is what says what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from regiment._text import clipped
from regiment.tools._mcp_server import HttpTransport, MCPServer, StdioTransport

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.exceptions import MCPError

__all__ = ("Refusals",)

# The SDK's stand-ins for an HTTP error status: they say nothing the status does not.
_STAND_INS = frozenset({"Server returned an error response", "Not Found"})


@final
class Refusals:
    """The HTTP error statuses a server answered with: 401 and 403 refuse our credentials,
    any other at the start says the URL or the server is wrong."""

    def __init__(self) -> None:
        self.count = 0  # 401s and 403s
        self._last: httpx2.Response | None = None
        self.failures = 0  # any other error status
        self._failed: httpx2.Response | None = None

    async def note(self, response: httpx2.Response) -> None:
        """An httpx response hook."""
        if response.status_code in (401, 403):
            self.count += 1
            self._last = response
        elif response.status_code >= 400:
            self.failures += 1
            self._failed = response

    def since(
        self, transport: HttpTransport | StdioTransport, mark: int, *, during: bool
    ) -> str | None:
        """What a refusal after the ``mark``-th one means for the user (``None``: none came).

        ``mark`` is ``count`` when the session opened (the server refused to start it)
        or, ``during`` a session, when a call was sent (credentials it took are refused)."""
        if self.count == mark or self._last is None or isinstance(transport, StdioTransport):
            return None
        return _refusal(transport, self._last, during=during)

    def call_error(self, server: MCPServer, mark: int, exc: MCPError) -> str:
        """What a call sent after the ``mark``-th refusal that failed with ``exc`` means."""
        why = self.since(server.transport, mark, during=True)
        if why is not None:  # the SDK's own words would be "Server returned an error response"
            return f"MCP server {server.name!r} refused the call: {why}"
        return (
            f"MCP server {server.name!r} answered with error {exc.error.code}: {exc.error.message}"
        )

    def start_failure(
        self, transport: HttpTransport, mark: int, failed: int, exc: BaseException
    ) -> Exception | None:
        """What the session that could not be opened (``mark``: ``count``, ``failed``:
        ``failures`` when it began) failed on, as an error that says what to do; ``None``:
        ``exc`` (the innermost exception) says it already."""
        refused = self.since(transport, mark, during=False)
        if refused is not None:
            return PermissionError(refused)
        if self.failures != failed and self._failed is not None:
            text = str(exc)
            return ConnectionError(_failed(self._failed, None if text in _STAND_INS else text))
        import httpx2

        if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout):
            said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return ConnectionError(
                f"nothing answered at its url ({said}): is the server running, and are the "
                "url's host and port right?"
            )
        return None


def _failed(response: httpx2.Response, said: str | None) -> str:
    """What an error status other than 401 and 403, at the start, means for the user."""
    status = f"HTTP {response.status_code} {response.reason_phrase}"
    told = f" (it said: {clipped(said, 200)})" if said else ""
    if response.status_code == 404:
        return (
            f"the server answered {status}{told}: nothing serves MCP at that path; check the "
            "url's path (servers made with the MCP SDK serve at /mcp)"
        )
    if response.status_code in (405, 501):
        return (
            f"the server answered {status}{told} to a POST: is the url the server's MCP "
            "endpoint, and does the server speak streamable HTTP (one that only speaks the "
            "older HTTP+SSE transport cannot be reached)?"
        )
    if response.status_code >= 500:
        return f"the server failed with {status}{told}: see the server's own log"
    return f"the server answered {status}{told}"


def _refusal(transport: HttpTransport, response: httpx2.Response, *, during: bool) -> str:
    """What a server that refused our credentials (401, 403) means for the user."""
    said = f"the server answered HTTP {response.status_code} {response.reason_phrase}"
    challenge = response.headers.get("www-authenticate")
    if challenge:
        said += f" (WWW-Authenticate: {clipped(challenge, 200)})"
    given = ", ".join(sorted(transport.headers)) or "none"
    if during:  # they were good enough to open the session
        return (
            f"{said} to this call, though it took the same credentials (headers sent: "
            f"{given}) when the session began: they may have expired or been revoked; "
            "give current ones in headers= and start the team again"
        )
    if response.status_code == 403:
        return f"{said}: the credentials sent are not accepted; check the headers= given"
    if transport.headers:  # it did get some: they are wrong, not missing
        return (
            f"{said}: it refused the credentials sent (headers sent: {given}); check their "
            "values (a mistyped, expired or revoked token?)"
        )
    return (
        f"{said}: it wants credentials; give them in headers= (headers sent: none), "
        'e.g. headers={"Authorization": "Bearer ..."} (in a team file: headers = '
        '{ Authorization = "Bearer ${TOKEN}" }, the token read from the environment)'
    )
