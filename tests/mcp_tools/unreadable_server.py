"""An MCP server written by hand that lists tools the SDK cannot read beside good ones:
``bad`` has an ``inputSchema`` with no ``"type"``, ``worse`` one that is not an object,
``loose`` one that is not valid JSON Schema; ``good`` and ``other`` (which has an output
schema, so its results are checked against it) are fine. Serves stdio."""

from __future__ import annotations

import json
import sys

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


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:  # a request (not a notification)
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": _answer(message)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
