"""MCP servers written by hand (JSON-RPC lines on stdio, no SDK), to send what the SDK's
servers never would. ``python hand_server.py KIND`` serves one of them:

``changing``: its tool list goes bad. It lists ``keep``, ``gone``, ``degrade`` and
``vanish``; a call of ``degrade`` removes ``gone``, adds ``notype`` (an ``inputSchema``
without ``"type"``, which the SDK refuses) and ``badschema`` (not valid JSON Schema), and
sends ``notifications/tools/list_changed`` before its answer. A call of ``vanish``
removes ``vanish``, says the list changed and answers ``isError``, as a call that reached
the server just after its tool was removed. A call of a tool it does not list is a
JSON-RPC error, as the SDK's servers answer.

``relist``: its ``tools/list`` fails after it said its tools changed. A call of
``change`` with ``failures`` adds the tool ``later``, sends
``notifications/tools/list_changed``, and answers the next ``failures`` lists with a
JSON-RPC error (then lists again as usual). ``pid`` answers the process id.

``flooding COUNT``: before it answers its first ``tools/list`` (as the client starts,
with no call in flight) it sends ``COUNT`` log messages (``notifications/message``:
``tick``, ``tick 1``, ...); its one tool, ``ping``, answers ``pong``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

Json = dict[str, object]


def _tool(name: str, schema: Json | None = None) -> Json:
    schema = schema or {"type": "object", "properties": {}}
    return {"name": name, "description": f"The tool {name}.", "inputSchema": schema}


def _send(message: Json) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


class _Changing:
    def __init__(self) -> None:
        self.tools = [_tool("keep"), _tool("gone"), _tool("degrade"), _tool("vanish")]

    def list(self) -> Json:
        return {"tools": self.tools}

    def call(self, name: str, arguments: Json) -> Json:
        if name not in {tool["name"] for tool in self.tools}:
            raise LookupError(-32602, f"Unknown tool: {name}")
        if name == "degrade":
            self.tools = [
                _tool("keep"),
                _tool("degrade"),
                _tool("notype", {"properties": {}}),
                _tool("badschema", {"type": "object", "properties": {"x": {"type": "bogus"}}}),
            ]
            _send({"method": "notifications/tools/list_changed"})
        if name == "vanish":
            self.tools = [tool for tool in self.tools if tool["name"] != "vanish"]
            _send({"method": "notifications/tools/list_changed"})
            return {"content": [{"type": "text", "text": "vanish was removed"}], "isError": True}
        return {"content": [{"type": "text", "text": f"{name} ran"}]}


class _Relist:
    def __init__(self) -> None:
        failures: Json = {"type": "object", "properties": {"failures": {"type": "integer"}}}
        self.tools = [_tool("change", failures), _tool("pid")]
        self.failing = 0

    def list(self) -> Json:
        if self.failing:
            self.failing -= 1
            raise LookupError(-32603, "list not ready")
        return {"tools": self.tools}

    def call(self, name: str, arguments: Json) -> Json:
        text = str(os.getpid())
        if name == "change":
            self.failing = int(str(arguments["failures"]))
            self.tools = [*self.tools, _tool("later")]
            _send({"method": "notifications/tools/list_changed"})
            text = "changed"
        return {"content": [{"type": "text", "text": text}]}


class _Flooding:
    def __init__(self, count: int) -> None:
        self.tools = [_tool("ping")]
        self.count = count

    def list(self) -> Json:
        for number in range(self.count):
            data = "tick" if number == 0 else f"tick {number}"
            _send({"method": "notifications/message", "params": {"level": "info", "data": data}})
        self.count = 0
        return {"tools": self.tools}

    def call(self, name: str, arguments: Json) -> Json:
        return {"content": [{"type": "text", "text": "pong"}]}


Server = _Changing | _Relist | _Flooding


def _answer(kind: str, server: Server, method: str, params: Json) -> Json:
    """A request's result; ``LookupError(code, message)`` for a JSON-RPC error."""
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": kind, "version": "1"},
        }
    if method == "tools/list":
        return server.list()
    if method == "tools/call":
        arguments = params.get("arguments")
        return server.call(str(params["name"]), arguments if isinstance(arguments, dict) else {})
    return {}


def main(kind: str) -> None:
    made: dict[str, Callable[[], Server]] = {
        "changing": _Changing,
        "relist": _Relist,
        "flooding": lambda: _Flooding(int(sys.argv[2])),
    }
    server = made[kind]()
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request or "method" not in request:  # a notification
            continue
        try:
            result = _answer(kind, server, request["method"], request.get("params") or {})
        except LookupError as exc:
            code, message = exc.args
            _send({"id": request["id"], "error": {"code": code, "message": message}})
            continue
        _send({"id": request["id"], "result": result})


if __name__ == "__main__":
    main(sys.argv[1])
