"""An MCP server written by hand whose tool list goes bad: it lists ``keep``, ``gone``
and ``degrade``; a call of ``degrade`` removes ``gone``, adds ``notype`` (an
``inputSchema`` without ``"type"``, which the SDK refuses) and ``badschema`` (not valid
JSON Schema), and sends ``notifications/tools/list_changed`` before its answer. A call
of ``vanish`` removes ``vanish``, says the list changed and answers ``isError``, as a
call that reached the server just after its tool was removed. A call of a tool it
does not list is a JSON-RPC error, as the SDK's servers answer. Serves stdio."""

from __future__ import annotations

import json
import sys


def _tool(name: str, schema: dict[str, object] | None = None) -> dict[str, object]:
    return {
        "name": name,
        "description": f"The tool {name}.",
        "inputSchema": schema or {"type": "object", "properties": {}},
    }


_AFTER = [
    _tool("keep"),
    _tool("degrade"),
    _tool("notype", {"properties": {}}),
    _tool("badschema", {"type": "object", "properties": {"x": {"type": "bogus"}}}),
]
tools = [_tool("keep"), _tool("gone"), _tool("degrade"), _tool("vanish")]


def _send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request or "method" not in request:  # a notification
        continue
    method, params = request["method"], request.get("params") or {}
    result: dict[str, object] = {}
    if method == "initialize":
        result = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "changing", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "tools/call":
        name = params["name"]
        if name not in {tool["name"] for tool in tools}:
            error = {"code": -32602, "message": f"Unknown tool: {name}"}
            _send({"id": request["id"], "error": error})
            continue
        if name == "degrade":
            tools = _AFTER
            _send({"method": "notifications/tools/list_changed"})
        result = {"content": [{"type": "text", "text": f"{name} ran"}]}
        if name == "vanish":
            tools = [tool for tool in tools if tool["name"] != "vanish"]
            _send({"method": "notifications/tools/list_changed"})
            result = {"content": [{"type": "text", "text": "vanish was removed"}], "isError": True}
    _send({"id": request["id"], "result": result})
