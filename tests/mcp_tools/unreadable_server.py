"""An MCP server written by hand that lists tools the SDK cannot read beside good ones:
``bad`` has an ``inputSchema`` with no ``"type"``, ``worse`` one that is not an object,
``loose`` one that is not valid JSON Schema; ``good`` and ``other`` (which has an output
schema, so its results are checked against it) are fine. Serves stdio, or with
``--http`` streamable HTTP (plain JSON answers) on a free port it prints as ``PORT n``."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

_OUTPUT = {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}
_TOOLS: list[dict[str, object]] = [
    {"name": "good", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "bad", "inputSchema": {"properties": {"x": {"type": "string"}}}},
    {"name": "worse", "inputSchema": "a string"},
    {"name": "loose", "inputSchema": {"type": "object", "properties": {"x": {"type": 7}}}},
    {"name": "other", "inputSchema": {"type": "object"}, "outputSchema": _OUTPUT},
]


def _answer(request: dict[str, object]) -> dict[str, object]:
    method, params = request.get("method"), request.get("params")
    assert isinstance(params, dict) or params is None
    if method == "initialize" and params is not None:
        info = {"name": "unreadable", "version": "1"}
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": info,
        }
    if method == "tools/list":
        return {"tools": _TOOLS}
    if method == "tools/call" and params is not None:
        v = 7 if params["name"] == "other" else 1
        return {
            "content": [{"type": "text", "text": json.dumps({"v": v})}],
            "structuredContent": {"v": v},
        }
    return {}


Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def _app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Streamable HTTP at its plainest: each POSTed request answered as JSON."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    status, answer = (405, b"") if scope["method"] == "GET" else (202, b"")
    if scope["method"] == "POST":
        message = json.loads(body)
        if "id" in message and "method" in message:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": _answer(message)}
            status, answer = 200, json.dumps(reply).encode()
    headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def _serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue from now on (refused before: a loaded test failed)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(_app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])


def _serve_stdio() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message and "method" in message:  # a request (not a notification)
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": _answer(message)}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    _serve_http() if "--http" in sys.argv else _serve_stdio()
