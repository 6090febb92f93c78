"""``regiment mcp --http``: the team's MCP server under uvicorn, with a stop that does
not wait for the clients.

uvicorn stops by waiting for every open response to end, and a client's standalone
SSE stream (the GET a streamable-HTTP client keeps open for the server's own
messages) never ends by itself: a stop waited as long as the client held it (until
its read timeout, five minutes for the SDK's own client). Here a stop cancels the
calls in flight (each ends with its error result, on its own POST response) and
ends every open GET stream cleanly, so uvicorn finds nothing left to wait for and
the client sees its stream end (and its reconnect refused).

A POST whose client goes away before its response is done (the client crashed, its
connection broke) cancels the call it brought: its answer could never be read (there
is no event store to resume the stream from), and the run went on for nobody, making
model calls to the end (see ``_mcp_calls``).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

import anyio
from mcp.server.mcpserver import MCPServer as SDKServer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from regiment._logging import logging_to
from regiment.cli._mcp_calls import Calls, Posted
from regiment.errors import ConfigError

if TYPE_CHECKING:
    import uvicorn

__all__ = ("serve_http",)

_STOPPING = b'{"error": "the server is stopping"}'

logger = logging.getLogger("regiment.mcp")


async def serve_http(
    server: SDKServer, port: int, stderr: TextIO, stop: anyio.Event, calls: Calls, note: str = ""
) -> None:
    """Serve over streamable HTTP on ``127.0.0.1:port`` until ``stop`` is set: the
    calls in flight are cancelled, the open GET streams ended, then uvicorn stops.
    ``note`` is said once the port listens, before the line with the server's URL."""
    import uvicorn

    class Server(uvicorn.Server):  # the signals are serve_team's: uvicorn's own handling
        @contextlib.contextmanager  # re-raised a SIGTERM, killing the process (exit 143)
        def capture_signals(self) -> Iterator[None]:
            yield

    with _listening(port) as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        if note:
            print(note, file=stderr, flush=True)
        print(f"regiment: serving team '{server.name}' at {url}", file=stderr, flush=True)
        streams = EndableStreams(server.streamable_http_app())
        # Not uvicorn's own logging config: its dictConfig and levels were the whole
        # process's, left behind for a program that serves in-process. Its warnings reach
        # ``stderr`` through regiment's handler instead, while this serves.
        config = uvicorn.Config(streams, log_config=None, lifespan="on")
        http = Server(config)
        with logging_to(stderr, logging.WARNING, ("uvicorn",)):
            await _serve_until(http, sock, stop, (calls, streams))


async def _serve_until(
    http: uvicorn.Server,
    sock: socket.socket,
    stop: anyio.Event,
    stopped: tuple[Calls, EndableStreams],
) -> None:
    """Serve ``http`` on ``sock`` until ``stop`` is set: then the calls are cancelled,
    the open GET streams ended, and uvicorn told to exit."""
    calls, streams = stopped
    async with anyio.create_task_group() as tg:

        async def stop_when_set() -> None:
            await stop.wait()
            calls.cancel()
            streams.end()
            http.should_exit = True

        tg.start_soon(stop_when_set)
        await http.serve(sockets=[sock])
        tg.cancel_scope.cancel()


@contextlib.contextmanager
def _listening(port: int) -> Iterator[socket.socket]:
    """A socket listening on ``127.0.0.1:port`` (clients can connect from here on);
    a ``ConfigError`` that says what to do when the port is taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ConfigError(
                f"cannot serve MCP on 127.0.0.1:{port} ({exc.strerror or exc}): pick another "
                "--http port (0 takes a free one), or stop what holds it"
            ) from None
        sock.listen(128)
        yield sock


class EndableStreams:
    """An ASGI app around ``app`` whose GET responses (the long-lived SSE streams)
    ``end()`` finishes: each is cut where it is and closed with the end of its body,
    so its client reads a stream that ended, not a broken connection. A GET that
    comes after ``end()`` is answered 503 at once."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._open: set[anyio.CancelScope] = set()
        self._ended = False

    def end(self) -> None:
        """End every open GET stream, and refuse the ones that come later."""
        self._ended = True
        for scope in list(self._open):
            scope.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            await self._post(scope, receive, send)
            return
        if scope["type"] != "http" or scope["method"] != "GET":
            await self._app(scope, receive, send)
            return
        response = _Progress(send)
        with anyio.CancelScope() as cut:
            if self._ended:
                cut.cancel()
            self._open.add(cut)
            try:
                await self._app(scope, receive, response.send)
            finally:
                self._open.discard(cut)
        if cut.cancelled_caught:
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError):  # one short write
                await response.finish()

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A POST, whose tool call (if it brings one) is cancelled when its client goes
        away before the response is done: no one could read the answer (see
        :class:`Posted`)."""
        response = _Progress(send)

        async def watched() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and not response.done:
                posted.left()
            return message

        with Posted() as posted:
            try:
                await self._app(scope, watched, response.send)
            except Exception:
                if not response.done:
                    raise
                # Its answer was sent (a notification's 202): the SDK failed to hand the
                # message on, as for a session the client ended (DELETE) meanwhile. Nothing
                # is left to tell the client; uvicorn would log a traceback.
                logger.debug("a POST failed after its response was sent", exc_info=True)
        if not response.done:  # cut short (its stream broke): as good as gone
            posted.left()


class _Progress:
    """How far a response got, so that one cut short can be finished properly."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._started = self.done = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.done = True
        await self._send(message)

    async def finish(self) -> None:
        """Finish the response: its body's end, or a 503 if nothing was sent yet."""
        if self.done:
            return
        if not self._started:
            headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
            await self._send({"type": "http.response.start", "status": 503, "headers": headers})
        await self._send(
            {"type": "http.response.body", "body": b"" if self._started else _STOPPING}
        )
