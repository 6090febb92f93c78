"""``regiment mcp`` over stdio, with a stop that does not wait for the client.

The SDK's own stdio transport reads stdin in a worker thread that nothing can
cancel: a stop on SIGTERM or Ctrl-C hung until the client wrote a line or closed
stdin. Here stdin and stdout are read and written on the event loop (a pipe or a
socket waits with ``wait_readable``/``wait_writable``; a file or ``/dev/null`` never
blocks), so a stop can end the read at once: the calls in flight are cut short and
answered, then the SDK sees the end of stdin, as when the client leaves.

While serving, fd 0 reads ``/dev/null`` and fd 1 writes to stderr (as the SDK's own
transport arranges), so a tool or a child process cannot read the client's
messages or break the wire with a stray print; both are restored afterwards.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.stdio import stdio_server

from regiment.errors import ConfigError

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    from regiment.cli._mcp_serve import Calls

__all__ = ("serve_stdio", "serve_streams")

_CHUNK = 65536

logger = logging.getLogger("regiment.mcp")


async def serve_stdio(server: SDKServer, stop: anyio.Event, calls: Calls) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client closes
    stdin or ``stop`` is set: then the calls in flight are cancelled, their error
    results written, and the SDK is shown the end of stdin."""
    with _claimed(0, os.O_RDONLY, os.devnull) as fd_in, _claimed(1, os.O_WRONLY, None) as fd_out:
        lines = _Lines(fd_in, calls)
        out = _Out(fd_out, calls, lines)
        async with anyio.create_task_group() as tg:

            async def stop_when_set() -> None:
                await stop.wait()
                calls.cancel()
                await calls.answered_all()
                lines.end()

            tg.start_soon(stop_when_set)
            # The SDK reads ``async for line in stdin`` and writes ``write``/``flush``.
            async with stdio_server(cast(Any, lines), cast(Any, out)) as (read, write):
                await serve_streams(server, read, write)
            tg.cancel_scope.cancel()


async def serve_streams(
    server: SDKServer,
    read: ReadStream[SessionMessage | Exception],
    write: WriteStream[SessionMessage],
) -> None:
    """Serve ``server`` on ``read`` and ``write`` until ``read`` ends, as the SDK's own
    ``MCPServer.run_stdio_async`` does with the streams of a ``stdio_server()`` it opens.

    The SDK (mcp 2.3) has no public way to serve an ``MCPServer`` on streams of one's
    own: only its low-level server has one, and that is the private
    ``_lowlevel_server`` (the SDK's own in-memory client reaches it the same way). This
    is the one place regiment touches it; ``tests/mcp_tools/test_mcp_serve_sdk.py``
    fails if the SDK stops serving stdio this way.

    Raises:
        ConfigError: the installed SDK has no such server (a version regiment does not
            support).
    """
    low = getattr(server, "_lowlevel_server", None)
    run = getattr(low, "run", None)
    options = getattr(low, "create_initialization_options", None)
    if run is None or options is None:
        from importlib.metadata import version

        raise ConfigError(
            f"regiment mcp cannot serve over stdio with the installed mcp SDK "
            f"({version('mcp')}): its MCPServer has no low-level server to run on streams; "
            "install a supported one: pip install 'mcp>=2.3,<3'"
        )
    await run(read, write, options())


@contextlib.contextmanager
def _claimed(fd: int, mode: int, diversion: str | None) -> Iterator[int]:
    """A private duplicate of ``fd`` (non-blocking when it is a pipe or a socket),
    while ``fd`` itself points at ``diversion`` (``None``: stderr); put back after."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    flags = os.get_blocking(private)
    if _pollable(private) and not os.isatty(private) and not _is_stderr(private):
        os.set_blocking(private, False)  # restored below: the description may be shared
    spare = os.open(diversion, mode) if diversion is not None else os.dup(2)
    os.dup2(spare, fd)
    os.close(spare)
    try:
        yield private
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, fd)
            os.set_blocking(fd, flags)
        os.close(private)


def _is_stderr(fd: int) -> bool:
    """Whether ``fd`` is where stderr goes (``2>&1``): made non-blocking, stderr's
    writes could fail when its reader lags."""
    try:
        mine, errors = os.fstat(fd), os.fstat(2)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (errors.st_dev, errors.st_ino)


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd`` (a regular file or ``/dev/null``
    cannot be polled, nor need to be: reading or writing them never blocks)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _Lines:
    """The lines of ``fd``, read on the event loop; ``end()`` ends them at once.

    At the end of ``fd`` the reader is told so only once the requests read have been
    answered (but tool calls: the client leaving cancels those), so a client that
    writes its requests and closes stdin at once (``regiment mcp T < requests``) still
    gets their answers."""

    def __init__(self, fd: int, calls: Calls) -> None:
        self._fd, self._pollable, self._calls = fd, _pollable(fd), calls
        self._buffer = bytearray()
        self._ended = False
        self._waiting = anyio.CancelScope()
        self._unanswered: set[str] = set()  # ids of requests read, but tool calls
        self._answered = anyio.Event()

    def end(self) -> None:
        """No more lines: the reader sees the end of stdin, as when the client leaves."""
        self._ended = True
        self._waiting.cancel()
        self._answered.set()

    def written(self, text: str) -> None:
        """``text`` was written to the client: the answer to a request, perhaps."""
        if self._unanswered:
            self._unanswered.discard(_field(text, "id"))
            if not self._unanswered:
                self._answered.set()

    def _read_one(self, line: str) -> str:
        message = _message(line)
        if not message and line.strip():  # the SDK drops it, saying so only at DEBUG
            logger.warning(
                "a line from the client is not a JSON-RPC message (a JSON object), so it "
                "was dropped unanswered: %.80r; a client writes one JSON object a line",
                line.rstrip("\n"),
            )
        params = message.get("params")
        if message.get("method") == "notifications/cancelled" and isinstance(params, dict):
            cancelled = str(params.get("requestId"))  # never answered, so not waited for
            self._unanswered.discard(cancelled)
            self._calls.unheard(cancelled)
        elif "id" in message and message.get("method") not in (None, "tools/call"):
            self._unanswered.add(str(message["id"]))
        return line

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        start = 0
        while (newline := self._buffer.find(b"\n", start)) < 0:
            start = len(self._buffer)
            chunk = await self._read()
            if not chunk:
                if not self._buffer or self._ended:
                    await self._settled()
                    raise StopAsyncIteration
                newline = len(self._buffer) - 1  # a last line without its newline
                break
            self._buffer += chunk
        line = bytes(self._buffer[: newline + 1])
        del self._buffer[: newline + 1]
        return self._read_one(line.decode("utf-8", errors="replace"))

    async def _settled(self) -> None:
        while self._unanswered and not self._ended:
            await self._answered.wait()
            self._answered = anyio.Event()

    async def _read(self) -> bytes:
        while not self._ended:
            if self._pollable:
                with anyio.CancelScope() as self._waiting:
                    await anyio.wait_readable(self._fd)
                if self._waiting.cancelled_caught:  # end() came
                    break
            try:
                return os.read(self._fd, _CHUNK)
            except BlockingIOError:
                continue
        return b""


def _message(line: str) -> dict[str, Any]:
    """``line`` as a JSON object ({} if it is not one)."""
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _field(line: str, key: str) -> str:
    return str(_message(line).get(key))


class _Out:
    """Lines written to ``fd`` on the event loop; each is shown to ``calls`` (a stop
    waits for the answers of the calls it cut short)."""

    def __init__(self, fd: int, calls: Calls, lines: _Lines) -> None:
        self._fd, self._pollable, self._calls, self._lines = fd, _pollable(fd), calls, lines

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            if self._pollable:
                await anyio.wait_writable(self._fd)
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):  # the client left
                self._calls.unheard()  # a stop has no one left to answer
                self._lines.end()
                raise anyio.ClosedResourceError from None
        self._calls.written(text)
        self._lines.written(text)

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()
