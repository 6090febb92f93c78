"""An MCP server written by hand whose ``tools/list`` fails after it said its tools
changed: a call of ``change`` with ``failures`` adds the tool ``later``, sends
``notifications/tools/list_changed``, and answers the next ``failures`` lists with a
JSON-RPC error (then lists again as usual). ``pid`` answers the process id. Serves
stdio."""

from __future__ import annotations

import json
import os
import sys


def _tool(name: str, properties: dict[str, object] | None = None) -> dict[str, object]:
    schema = {"type": "object", "properties": properties or {}}
    return {"name": name, "description": f"The tool {name}.", "inputSchema": schema}


tools = [_tool("change", {"failures": {"type": "integer"}}), _tool("pid")]
failing = 0


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
            "serverInfo": {"name": "relist", "version": "1"},
        }
    elif method == "tools/list" and failing:
        failing -= 1
        _send({"id": request["id"], "error": {"code": -32603, "message": "list not ready"}})
        continue
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "tools/call":
        text = str(os.getpid())
        if params["name"] == "change":
            failing = int(params["arguments"]["failures"])
            tools = [*tools, _tool("later")]
            _send({"method": "notifications/tools/list_changed"})
            text = "changed"
        result = {"content": [{"type": "text", "text": text}]}
    _send({"id": request["id"], "result": result})
