"""``regiment serve`` run in-process for a test: its stderr, a free port, a few requests."""

from __future__ import annotations

import io
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2 as httpx

from regiment.cli import run_async

__all__ = ("GOAL", "REFUND", "Log", "free_port", "serve_and_ask", "served")

REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


class Log(io.StringIO):
    """stderr that sets ``ready`` once uvicorn says it is listening."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = anyio.Event()

    def write(self, text: str) -> int:
        if "Uvicorn running on" in text:
            self.ready.set()
        return super().write(text)


def free_port() -> int:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def served(
    flags: list[str], err: Log | None = None, team: str = REFUND
) -> AsyncIterator[httpx.AsyncClient]:
    """``regiment serve`` of the refund team, or of the ``team`` file (``--model scripted``
    plus ``flags``), and a client of it; the command is stopped on the way out and must
    exit 0."""
    port, err, stop = free_port(), err or Log(), anyio.Event()
    argv = ["serve", team, "--port", str(port), "--model", "scripted", *flags]
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            code = await run_async(
                argv, stdout=io.StringIO(), stderr=err, environ={}, interrupt=stop
            )
            assert code == 0, err.getvalue()

        tg.start_soon(serve)
        await err.ready.wait()
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
                yield c
        finally:
            stop.set()


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
