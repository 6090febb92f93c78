"""A streamable-HTTP MCP server that cannot be reached says what to check: nothing
listening (host, port), nothing serving MCP at the path, a server that does not take
MCP's POSTs, or one that failed. The SDK said only "All connection attempts failed",
"Not Found" or "Server returned an error response"."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from regiment.errors import ConfigError, ToolError
from regiment.tools import MCPHub, MCPServer, Toolset

from .conftest import SDK_HTTP_LEAKS

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]


class _Answers(BaseHTTPRequestHandler):
    """Answers every request with the status its server was given (no MCP at all)."""

    def do_POST(self) -> None:
        self.send_error(getattr(self.server, "status", 500))

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def plain_http() -> Iterator[ThreadingHTTPServer]:
    """A plain HTTP server on a free port, in a thread (set ``.status`` to its answer)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def _start_error(url: str) -> str:
    async with MCPHub.open() as hub:
        with pytest.raises(ToolError) as failed:
            await hub.worker_tools(Toolset("w"), [MCPServer.http(url, name="remote")])
    prefix = f"MCP server 'remote' ({url}) could not be connected to: ConnectionError: "
    assert str(failed.value).startswith(prefix)
    return str(failed.value).removeprefix(prefix)


async def test_nothing_listening_asks_whether_the_server_runs_at_that_host_and_port(
    refused_port: int,
) -> None:
    said = await _start_error(f"http://127.0.0.1:{refused_port}/mcp")
    assert said.startswith("nothing answered at its url (ConnectError: ")  # anyio's words
    assert said.endswith("): is the server running, and are the url's host and port right?")


async def test_a_wrong_path_on_a_real_mcp_server_says_to_check_the_path(http_url: str) -> None:
    said = await _start_error(http_url.removesuffix("/mcp") + "/nope")
    assert said == (
        "the server answered HTTP 404 Not Found: nothing serves MCP at that path; check the "
        "url's path (servers made with the MCP SDK serve at /mcp)"
    )


@pytest.mark.parametrize("status", [405, 501])
async def test_a_server_that_refuses_posts_is_asked_about_its_transport(
    plain_http: ThreadingHTTPServer, status: int
) -> None:
    plain_http.status = status  # type: ignore[attr-defined]
    said = await _start_error(f"http://127.0.0.1:{plain_http.server_address[1]}/sse")
    assert said.startswith(f"the server answered HTTP {status} ")
    assert said.endswith(
        " to a POST: is the url the server's MCP endpoint, and does the server speak "
        "streamable HTTP (one that only speaks the older HTTP+SSE transport cannot be reached)?"
    )


async def test_a_server_that_failed_says_to_read_its_log(plain_http: ThreadingHTTPServer) -> None:
    plain_http.status = 502  # type: ignore[attr-defined]
    said = await _start_error(f"http://127.0.0.1:{plain_http.server_address[1]}/mcp")
    assert said == "the server failed with HTTP 502 Bad Gateway: see the server's own log"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1/mcp", "does not parse (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999/mcp", "does not parse (Port out of range 0-65535)"),
        ("http://127.0.0.1:port/mcp", "does not parse (Port could not be cast"),
        ("http:///mcp", "needs a URL with a host"),
        (8000, "needs a URL as a str, such as http://127.0.0.1:8000/mcp; got int"),
    ],
)
def test_a_url_that_does_not_parse_is_a_config_error_at_once(url: str | int, why: str) -> None:
    """It was an ``ExceptionGroup`` of a ``ValueError`` when the team started (the
    message meant to name the server could not parse its URL either)."""
    with pytest.raises(ConfigError, match=r"MCPServer\.http needs a ") as info:
        MCPServer.http(url, name="h")  # type: ignore[arg-type]  # (an int: it said AttributeError)
    assert why in str(info.value)


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"Authorization": "Bearer s3cret\n"}, "header 'Authorization' has a line break or NUL"),
        ({"X-Key": "s3cret\r"}, "header 'X-Key' has a line break"),
        ({"X Key": "s3cret"}, "'X Key' is not a valid HTTP header name"),
        ({"X-Key": "s3crét"}, "header 'X-Key' has a character that is not ASCII"),
    ],
)
def test_a_header_that_cannot_be_sent_is_named_and_its_value_never_shown(
    headers: dict[str, str], why: str
) -> None:
    """httpx's error at the start quoted the value ("Illegal header value b'Bearer ...'"):
    a token read from a file with its newline went whole into the error and the log."""
    with pytest.raises(ConfigError, match=r"MCPServer\.http: ") as info:
        MCPServer.http("http://127.0.0.1:8000/mcp", headers, name="h")
    assert why in str(info.value)
    assert "s3cr" not in str(info.value)
