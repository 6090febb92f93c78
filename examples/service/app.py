"""A raw ASGI app that starts one team at startup and serves many goals at once.

* ``lifespan``: the team's actors start at ``startup`` and stop at
  ``shutdown``; the ``async with team.start()`` block spans the app's life.
* ``POST /runs`` (body: the goal as text) runs the goal and answers with JSON.
  Each request runs its own goal on the shared team, concurrently.
* If the client disconnects first, the run is cancelled: its steps stop,
  and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import final

import anyio
import msgspec

from regiment.errors import RegimentError
from regiment.hierarchy import Event, RunCompleted, RunningTeam, Team

__all__ = ("App", "Receive", "Scope", "Send")

Scope = MutableMapping[str, object]
Message = MutableMapping[str, object]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
EventHook = Callable[[int, Event], None]


class _Answer(msgspec.Struct, frozen=True):
    answer: str
    status: str
    plan_versions: int
    trace_id: str | None


@final
class App:
    """The ASGI application.

    Args:
        team: the team every request runs its goal on.
        on_event: called with (request number, event) for every event of every run.
        on_cancel: called with the request number when a client left mid-run.
    """

    def __init__(
        self,
        team: Team,
        *,
        on_event: EventHook | None = None,
        on_cancel: Callable[[int], None] | None = None,
    ) -> None:
        self._team = team
        self._running: RunningTeam | None = None
        self._on_event = on_event
        self._on_cancel = on_cancel
        self._requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with self._team.start() as running:
            self._running = running
            await send({"type": "lifespan.startup.complete"})
            message = await receive()  # wait for lifespan.shutdown
            self._running = None
        await send({"type": "lifespan.shutdown.complete"})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["method"], scope["path"]) != ("POST", "/runs"):
            await _respond(send, 404, b'{"error": "POST a goal to /runs"}')
            return
        if self._running is None:
            await _respond(send, 503, b'{"error": "the team is not started"}')
            return
        goal = await _read_body(receive)
        self._requests += 1
        number = self._requests
        answer: bytes | None = None
        gone = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def cancel_on_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone.set()
                tg.cancel_scope.cancel()  # the client left: stop its run

            tg.start_soon(cancel_on_disconnect)
            answer = await self._run(self._running, number, goal)
            tg.cancel_scope.cancel()
        if gone.is_set():  # nobody to answer; the run was cancelled with the task group
            if self._on_cancel is not None:
                self._on_cancel(number)
            return
        status = 200 if answer is not None else 422
        await _respond(send, status, answer or b'{"error": "the run failed"}')

    async def _run(self, running: RunningTeam, number: int, goal: str) -> bytes | None:
        try:
            async with running.stream(goal) as events:
                async for event in events:
                    if self._on_event is not None:
                        self._on_event(number, event)
                    if isinstance(event, RunCompleted):
                        r = event.result
                        body = _Answer(r.answer, r.status, len(r.plans), r.trace_id)
                        return msgspec.json.encode(body)
        except RegimentError:
            return None
        return None


async def _read_body(receive: Receive) -> str:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        body = message.get("body", b"")
        chunks.append(body if isinstance(body, bytes) else b"")
        if not message.get("more_body"):
            return b"".join(chunks).decode("utf-8")


async def _respond(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
