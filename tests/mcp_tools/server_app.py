"""A real MCP server for the tests, run as a subprocess.

``python server_app.py`` serves over stdio; ``--http`` serves streamable HTTP on a
free 127.0.0.1 port (or ``--port``), printing ``PORT <n>`` once its socket listens
(with ``--token T``, a request without ``Authorization: Bearer T`` is answered 401,
and the tool ``rotate_token`` makes the server want ``T-rotated`` from then on, as a
token that expires mid-session);
``--stubborn`` ignores SIGTERM and keeps running after its stdin closes, so
only SIGKILL stops it; ``--slow-start S`` waits S seconds before it serves; ``--twins``
adds two tools whose names a model API sees alike.
"""

# ruff: noqa: E402  (the SDK is imported with the collector off, see below)
from __future__ import annotations

import argparse
import gc
import os
import signal
import socket
import sys
import threading
import time
import warnings

# Each stdio test starts this server afresh, and most of its start is the SDK's import
# (~0.97 s CPU, 179 collections taking 0.08 s of it): no collection meanwhile, and what
# it made is frozen after (gc.freeze()), out of every later collection's sight.
gc.disable()
import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations, ToolListChangedNotification
from starlette.types import ASGIApp, Receive, Scope, Send

gc.freeze()
gc.enable()


def build(name: str) -> MCPServer:
    """The server's tools, each for one kind of test."""
    app: MCPServer = MCPServer(name, log_level="ERROR")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool()
    def half(x: float) -> float:
        """Half of a number."""
        return x / 2

    @app.tool()
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @app.tool()
    def refuse(reason: str) -> str:
        """Always fails, with the reason as the message."""
        raise ToolError(reason)

    @app.tool()
    def protocol_error(code: int) -> str:
        """Answer with a JSON-RPC error of ``code``, not a result."""
        raise MCPError(code=code, message=f"error {code}, as asked")

    @app.tool()
    def getenv(name: str) -> str:
        """The value of the server's environment variable ``name`` ("" if unset)."""
        return os.environ.get(name, "")

    @app.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @app.tool()
    async def hang(port: int) -> str:
        """Tell the test on ``port`` that the call arrived, then never answer."""
        with socket.create_connection(("127.0.0.1", port)):
            pass
        await anyio.sleep_forever()
        return "unreachable"

    @app.tool()
    async def watch(port: int) -> str:
        """Tell the test on ``port`` that the call arrived, then wait; when the call is
        cancelled (the client sent ``notifications/cancelled``), say so there."""
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(b"started\n")
            try:
                await anyio.sleep_forever()
            finally:
                with anyio.CancelScope(shield=True):
                    await stream.send(b"cancelled\n")
        return "unreachable"

    @app.tool()
    def crash() -> str:
        """Exit the process in the middle of the call."""
        os._exit(3)

    @app.tool()
    def picture(size: int) -> Image:
        """A PNG of ``size`` bytes."""
        return Image(data=b"\x89PNG" + bytes(size - 4), format="png")

    @app.tool()
    def quit_soon() -> str:
        """Answer, then exit a moment later (a crash while idle)."""
        threading.Timer(0.2, os._exit, args=(5,)).start()
        return "bye"

    @app.tool()
    def flaky(marker: str) -> str:
        """Crash the first time (leaving ``marker`` behind), answer the next time."""
        if not os.path.exists(marker):
            with open(marker, "w"):
                pass
            os._exit(4)
        return "second time lucky"

    @app.tool()
    async def learn(ctx: Context) -> str:
        """Add a tool named ``taught`` and tell the client the list changed."""

        def taught() -> str:
            """A tool that appears at run time."""
            return "learned"

        app.add_tool(taught)
        # The initialize handshake's versions (up to 2025-11-25) carry list changes as
        # a session notification (ctx.notify_tools_changed is the 2026 subscription form).
        await ctx.session.send_tool_list_changed()
        return "ok"

    @app.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool called ``name`` and, on this call's own stream, say the list changed."""

        def grown() -> str:
            """A tool added by ``grow``."""
            return "grown"

        app.add_tool(grown, name=name)
        changed = ToolListChangedNotification()
        await ctx.session.send_notification(changed, related_request_id=ctx.request_id)
        return "ok"

    @app.tool()
    async def chatty(
        ctx: Context, text: str, level: str = "info", count: int = 1, logger: str = ""
    ) -> str:
        """Log ``text`` to the client ``count`` times at ``level`` (numbered after the
        first), as ``logger`` if given; then answer."""
        with warnings.catch_warnings():  # the SDK calls logging deprecated as of 2026-07-28
            warnings.simplefilter("ignore")
            for number in range(count):
                said = text if number == 0 else f"{text} {number}"
                await ctx.log(level, said, logger_name=logger or None)  # type: ignore[arg-type]
        return f"logged {count}"

    @app.tool()
    async def log_object(ctx: Context) -> str:
        """Log a JSON object (not a string) at warning."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await ctx.log("warning", {"disk": "full", "free": 0})
        return "ok"

    @app.tool()
    def meta_key(ctx: Context, key: str = "regiment/idempotency_key") -> str:
        """The ``key`` of this call's ``_meta`` ("" if none), its idempotency key by default."""
        meta = ctx.request_context.meta or {}
        return str(meta.get(key, ""))

    _tallies(app)  # last: the tests that list the tools read the others first
    return app


def _tallies(app: MCPServer) -> None:
    """``tally`` (and ``tally_again``, which the server marks idempotent) counts a call of
    ``name`` as it starts, then acts (counts it again) only once ``release`` is called:
    a sync tool runs in a thread, which a cancelled call cannot stop, so a call whose
    caller gave up runs on here. ``release`` says how many calls started and acted."""
    counts: dict[str, list[int]] = {}
    released: set[str] = set()
    changed = threading.Condition()

    def tally(name: str) -> str:
        """Count a start, wait for ``release``, count an act."""
        with changed:
            counts.setdefault(name, [0, 0])[0] += 1
            changed.notify_all()
            changed.wait_for(lambda: name in released, timeout=30)
            counts[name][1] += 1
            changed.notify_all()
        return "acted"

    app.add_tool(tally, name="tally")
    app.add_tool(tally, name="tally_again", annotations=ToolAnnotations(idempotent_hint=True))

    @app.tool()
    def release(name: str, started: int) -> dict[str, int]:
        """Let the calls of ``name`` act, once ``started`` of them have started; how many
        started and acted."""
        with changed:
            changed.wait_for(lambda: counts.get(name, [0, 0])[0] >= started, timeout=30)
            released.add(name)
            changed.notify_all()
            changed.wait_for(lambda: counts[name][1] == counts[name][0], timeout=30)
            return {"started": counts[name][0], "acted": counts[name][1]}


def _guarded(app: ASGIApp, token: list[str] | None) -> ASGIApp:
    """``app``, answering 401 to a request without ``Authorization: Bearer <token[0]>``."""
    if token is None:
        return app

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        wanted = f"Bearer {token[0]}".encode()
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != wanted:
            challenge = (b"www-authenticate", b'Bearer realm="tests"')
            await send({"type": "http.response.start", "status": 401, "headers": [challenge]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


def _serve_http(app: MCPServer, port: int, token: str | None) -> None:
    import uvicorn

    wanted = None if token is None else [token]
    if wanted is not None:

        @app.tool()
        def rotate_token() -> str:
            """Want another token from now on, as if the one given had expired."""
            wanted[0] = f"{token}-rotated"
            return "rotated"

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # clients may connect from now on; uvicorn accepts when it runs
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    asgi = _guarded(app.streamable_http_app(), wanted)
    config = uvicorn.Config(asgi, log_level="error", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--stubborn", action="store_true")
    parser.add_argument("--name", default="testserver")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", help="with --http: refuse requests without this bearer token")
    parser.add_argument("--slow-start", type=float, default=0.0, help="seconds before serving")
    parser.add_argument("--twins", action="store_true", help="two tools alike to a model API")
    args = parser.parse_args()
    time.sleep(args.slow_start)
    app = build(args.name)
    if args.twins:  # 'twin.tool' is 'twin_tool' to a model API, as is 'twin_tool'
        app.add_tool(lambda: "dotted", name="twin.tool", description="One twin.")
        app.add_tool(lambda: "plain", name="twin_tool", description="The other.")
    if args.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.http:
        _serve_http(app, args.port, args.token)
    else:
        app.run()
    if args.stubborn:
        sys.stdout.close()
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
