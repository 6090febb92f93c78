"""An MCP server written by hand, for replies the SDK's own server cannot send: one
tool, ``deep``, answered with ``structuredContent`` nested 100,000 levels deep (past
the client's JSON parser), and ``shallow``, answered normally; ``chatty``, which
writes lines that are no MCP message to stdout (as a ``print()`` would) before its
answer; and tools whose input schemas have a ``$ref`` that points nowhere. Serves stdio."""

from __future__ import annotations

import json
import sys

_TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object", "properties": {}}}
    for name in ("deep", "shallow", "chatty")
]
_NOWHERE = {  # input schemas whose $ref points nowhere: here, elsewhere, under an $id
    "dangling": {"$ref": "#/$defs/Missing"},
    "remote": {"$ref": "https://schemas.example.invalid/x.json"},
    "scoped": {"$id": "https://example.invalid/x", "$ref": "#/$defs/Missing"},
}
_TOOLS += [
    {"name": name, "description": name, "inputSchema": {"type": "object", "properties": {"x": x}}}
    for name, x in _NOWHERE.items()
]


def _answer(request: dict[str, object]) -> str:
    method, params = request.get("method"), request.get("params")
    assert isinstance(params, dict) or params is None
    result: object = {}
    if method == "initialize" and params is not None:
        info = {"name": "raw", "version": "1"}
        result = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": info,
        }
    elif method == "tools/list":
        result = {"tools": _TOOLS}
    elif method == "tools/call" and params is not None and params["name"] == "deep":
        depth = 100_000
        nested = "[" * depth + "]" * depth
        text = '{"content": [], "structuredContent": {"a": ' + nested + "}}"
        return f'{{"jsonrpc": "2.0", "id": {json.dumps(request["id"])}, "result": {text}}}'
    elif method == "tools/call" and params is not None and params["name"] == "chatty":
        sys.stdout.write("working on it...\n\n   \n")
        result = {"content": [{"type": "text", "text": "chatty done"}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "shallow"}]}
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:  # a request (not a notification)
        sys.stdout.write(_answer(message) + "\n")
        sys.stdout.flush()
