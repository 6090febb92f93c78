"""Calling an ASGI app in-process (no server, no network): lifespan and one request.

What a server such as uvicorn does, reduced to what the example and its test need.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .app import App, Message, Scope

__all__ = ("Response", "lifespan", "request")


@dataclass(frozen=True)
class Response:
    """What the app sent: its status and body, or ``None`` if it sent nothing."""

    status: int | None
    body: bytes


class _Channel:
    """The app's ``receive`` (fed by us) and ``send`` (collected by us)."""

    def __init__(self) -> None:
        self.to_app: MemoryObjectSendStream[Message]
        self._from_us: MemoryObjectReceiveStream[Message]
        self.to_app, self._from_us = anyio.create_memory_object_stream[Message](8)
        self.sent: list[Message] = []
        self.sent_event = anyio.Event()

    def close(self) -> None:
        self.to_app.close()
        self._from_us.close()

    async def receive(self) -> Message:
        return await self._from_us.receive()

    async def send(self, message: Message) -> None:
        self.sent.append(message)
        self.sent_event.set()
        self.sent_event = anyio.Event()


@asynccontextmanager
async def lifespan(app: App) -> AsyncIterator[None]:
    """Run the app's startup, yield while it serves, then its shutdown."""
    channel = _Channel()
    async with anyio.create_task_group() as tg:
        scope: Scope = {"type": "lifespan"}
        tg.start_soon(app.__call__, scope, channel.receive, channel.send)
        await channel.to_app.send({"type": "lifespan.startup"})
        while not channel.sent:
            await channel.sent_event.wait()
        assert channel.sent[0]["type"] == "lifespan.startup.complete", channel.sent[0]
        try:
            yield
        finally:
            await channel.to_app.send({"type": "lifespan.shutdown"})
    channel.close()


async def request(
    app: App, method: str, path: str, body: bytes = b"", *, leave: anyio.Event | None = None
) -> Response:
    """Send one HTTP request; if ``leave`` is set before the answer, the client disconnects."""
    channel = _Channel()
    scope: Scope = {"type": "http", "method": method, "path": path, "headers": []}
    await channel.to_app.send({"type": "http.request", "body": body, "more_body": False})
    async with anyio.create_task_group() as tg:
        if leave is not None:

            async def disconnect() -> None:
                await leave.wait()
                await channel.to_app.send({"type": "http.disconnect"})

            tg.start_soon(disconnect)
        await app(scope, channel.receive, channel.send)  # returns once it answered or saw us leave
        tg.cancel_scope.cancel()
    channel.close()
    status = next((m["status"] for m in channel.sent if m["type"] == "http.response.start"), None)
    data = b"".join(
        m["body"]
        for m in channel.sent
        if m["type"] == "http.response.body" and isinstance(m["body"], bytes)
    )
    return Response(status=status if isinstance(status, int) else None, body=data)
