"""Serve an ASGI app with uvicorn on a free 127.0.0.1 port for the length of a block."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import uvicorn
from starlette.types import ASGIApp

__all__ = ("serving",)


@asynccontextmanager
async def serving(app: ASGIApp) -> AsyncIterator[str]:
    """Yields the base URL; stops the server and waits for it on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # clients queue here until uvicorn, after the lifespan, accepts
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve([sock])
        finally:
            stopped.set()

    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:  # even when the block failed: a cancelled uvicorn logs a traceback
                server.should_exit = True
                with anyio.move_on_after(10, shield=True):
                    await stopped.wait()
