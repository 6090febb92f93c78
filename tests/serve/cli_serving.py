"""``regiment serve`` run in-process for a test: its stderr, a free port, a few requests."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import anyio
import httpx2 as httpx

from regiment.cli import run_async

__all__ = ("GOAL", "REFUND", "Log", "free_port", "serve_and_ask")

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


async def serve_and_ask(
    flags: list[str], ask: list[tuple[str, str]], err: Log | None = None
) -> list[httpx.Response]:
    """Serve the refund team (``--model scripted`` plus ``flags``), make the ``ask``
    requests (a POST's body is ``GOAL``), then stop the command; it must exit 0."""
    port, err, stop = free_port(), err or Log(), anyio.Event()
    argv = ["serve", REFUND, "--port", str(port), "--model", "scripted", *flags]
    answers: list[httpx.Response] = []
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            code = await run_async(
                argv, stdout=io.StringIO(), stderr=err, environ={}, interrupt=stop
            )
            assert code == 0, err.getvalue()

        tg.start_soon(serve)
        await err.ready.wait()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as c:
            for method, path in ask:
                body = {"goal": GOAL} if method == "POST" else None
                answers.append(await c.request(method, path, json=body))
        stop.set()
    return answers
