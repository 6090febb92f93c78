"""``regiment serve`` run in-process for a test: its stderr, a free port, a few requests.

Each server is started with ``--port 0`` and reached on the port uvicorn says it took:
a port found free beforehand (bound and closed again) could be taken meanwhile by another
test's server, in the other xdist worker or a Ray node, and the serve then never came up."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2 as httpx

from regiment.cli import run_async
from tests.cli.helpers import read_until

__all__ = (
    "EMBEDDED",
    "GOAL",
    "REFUND",
    "REGIMENT",
    "MCP_LISTENING",
    "Log",
    "Served",
    "in_process",
    "listening_port",
    "serve_and_ask",
    "served",
    "serving",
)

REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


_LISTENING = re.compile(r"Uvicorn running on http://[^\s:]+:(\d+)")


def listening_port(text: str) -> int:
    """The port of uvicorn's "Uvicorn running on http://HOST:PORT" line in ``text``."""
    found = _LISTENING.search(text)
    assert found is not None, f"uvicorn named no port: {text!r}"
    return int(found[1])


MCP_LISTENING = re.compile(r"regiment: serving team '.*' at http://[^\s:]+:(\d+)/mcp")
"""What ``regiment mcp --http`` says once it listens (for ``Log(MCP_LISTENING)``)."""


class Log(io.StringIO):
    """stderr that sets ``ready`` once uvicorn says it is listening (or the server says
    ``listening``), and keeps the ``port`` it says it listens on (the one it took, given
    ``--port 0``)."""

    def __init__(self, listening: re.Pattern[str] = _LISTENING) -> None:
        super().__init__()
        self.ready = anyio.Event()
        self.port = 0
        self._listening = listening

    def write(self, text: str) -> int:
        found = self._listening.search(text)
        if found is not None and not self.ready.is_set():
            self.port = int(found[1])
            self.ready.set()
        return super().write(text)


@asynccontextmanager
async def in_process(argv: list[str], err: Log) -> AsyncIterator[None]:
    """The server command ``argv`` run in this process until ``err.ready`` is set (it
    listens); stopped on the way out, when it must exit 0. ``err`` is its stderr."""
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            code = await run_async(
                argv, stdout=io.StringIO(), stderr=err, environ={}, interrupt=stop
            )
            assert code == 0, err.getvalue()

        tg.start_soon(serve)
        with anyio.fail_after(30):  # a server that never says it listens fails, not hangs
            await err.ready.wait()
        try:
            yield
        finally:
            stop.set()


@asynccontextmanager
async def served(
    flags: list[str], err: Log | None = None, team: str = REFUND
) -> AsyncIterator[httpx.AsyncClient]:
    """``regiment serve`` of the refund team, or of the ``team`` file (``--model scripted``
    plus ``flags``), and a client of it; the command is stopped on the way out and must
    exit 0."""
    err = err or Log()
    argv = ["serve", team, "--port", "0", "--model", "scripted", *flags]
    async with (
        in_process(argv, err),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{err.port}") as c,
    ):
        yield c


async def serve_and_ask(
    flags: list[str], ask: list[tuple[str, str]], err: Log | None = None, team: str = REFUND
) -> list[httpx.Response]:
    """Serve (see ``served``), make the ``ask`` requests (a POST's body is ``GOAL``), then
    stop the command."""
    async with served(flags, err, team) as c:
        return [
            await c.request(method, path, json={"goal": GOAL} if method == "POST" else None)
            for method, path in ask
        ]


class Served:
    """A ``regiment serve`` process: the child, its URL, and its stderr lines read so far."""

    def __init__(self, child: subprocess.Popen[str], url: str) -> None:
        self.child, self.url = child, url
        self.seen: list[str] = []

    def read_until(self, text: str) -> None:
        """Read its stderr until a line holds ``text``."""
        read_until(self.child, text, self.seen)

    def rest(self, timeout: float = 30) -> tuple[int, str]:
        """Its exit code, once it has exited, and all it wrote to stderr."""
        assert self.child.stderr is not None
        rest = self.child.stderr.read()
        return self.child.wait(timeout=timeout), "".join(self.seen) + rest


REGIMENT = ("-m", "regiment")
"""The ``regiment`` command, as ``python`` runs it."""
EMBEDDED = (str(Path(__file__).with_name("embedded.py")),)
"""A user's program that serves with ``serve_command`` (see ``embedded.py``)."""


@contextmanager
def serving(
    team: Path, *flags: str, env: dict[str, str] | None = None, program: tuple[str, ...] = REGIMENT
) -> Iterator[Served]:
    """``python -m regiment serve TEAM`` (its ``--app-dir`` the team file's folder, plus
    ``flags``; ``env`` added to its environment), or ``program`` given those arguments,
    as a process of its own, once it listens; killed on the way out if still up."""
    argv = ["serve", str(team), "--port", "0", "--app-dir", str(team.parent), *flags]
    with subprocess.Popen(
        [sys.executable, *program, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    ) as child:
        served = Served(child, "")
        try:
            served.read_until("Uvicorn running on")
            served.url = f"http://127.0.0.1:{listening_port(served.seen[-1])}"
            yield served
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
