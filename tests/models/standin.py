"""A loopback HTTP/1.1 stand-in for a model API, run by the test's own task group.

It records every request and answers each with the next queued ``Reply``: a
JSON body, or, when the request asked to stream (``"stream": true`` in its
body) and the reply has ``events``, a server-sent-event stream. A reply can
cut its stream short (the connection closes mid-body), stall mid-body (for
read timeouts), hold forever (for cancellation tests), or carry raw bytes (for malformed streams). The wire
format of the bodies is the caller's business: ``test_anthropic`` and
``test_openai`` build Messages API and Chat Completions bodies for it.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from regiment.models import PartDelta

__all__ = (
    "Collected",
    "Recorded",
    "Reply",
    "SseEvent",
    "StandIn",
    "half_read_body",
    "serve",
    "sse",
)

# On trio, an error mid-stream leaves the SDKs' and the HTTP client's half-read body
# generators to the garbage collector, and trio warns about that; the connection
# itself is closed by the model. Only the tests that break a stream on purpose ignore it.
half_read_body = pytest.mark.filterwarnings(
    "ignore:Async generator 'httpx2.:ResourceWarning",
    "ignore:Async generator 'openai.:ResourceWarning",
    "ignore:Async generator 'anthropic.:ResourceWarning",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)

SseEvent = tuple[str | None, str]  # (event name or None, data)
_GONE = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]  # decoded JSON, indexed freely by the assertions


@dataclass
class Reply:
    status: int
    body: dict[str, object]
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False  # never answer: for cancellation tests
    events: list[SseEvent] | None = None  # the streamed form of `body`
    cut_after: int | None = None  # stream only this many events, then drop the connection
    stall_after: int | None = None  # stream only this many events, then send nothing more
    raw: bytes | None = None  # a body sent as it is (malformed-reply tests)
    content_type: str | None = None  # instead of the usual one (JSON, or an event stream)


def sse(events: list[SseEvent]) -> bytes:
    """Events in the text/event-stream format."""
    lines = []
    for name, data in events:
        lines.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    return "".join(lines).encode()


@dataclass
class StandIn:
    """The stand-in: answers each request with the next queued reply."""

    base_url: str
    no_reply: Reply
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    received: anyio.Event = field(default_factory=anyio.Event)
    streaming: bool = True  # whether the test's model asks for streams (fixtures set it)

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def handle(self, stream: SocketStream) -> None:
        """Serve one connection; a client that goes away (before, in or after a request's
        body, or while it is answered) ends only its connection, not the server: an error
        out of here would end the listener, and the test with it."""
        async with stream:
            try:
                await self._answer(stream)
            except _GONE:
                return  # the client closed the connection (or reset it: it reads no more)

    async def _answer(self, stream: SocketStream) -> None:
        buffered = BufferedByteReceiveStream(stream)
        while True:  # one connection carries several requests (keep-alive)
            head = await buffered.receive_until(b"\r\n\r\n", 65536)
            request_line, *lines = head.decode("latin-1").split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            headers = {
                name.strip().lower(): value.strip()
                for name, value in (line.split(":", 1) for line in lines)
            }
            raw = await buffered.receive_exactly(int(headers.get("content-length", "0")))
            recorded = Recorded(method, path, headers, json.loads(raw or b"{}"))
            self.requests.append(recorded)
            self.received.set()
            reply = self.replies.popleft() if self.replies else self.no_reply
            if reply.hold:
                continue  # the handler goes on waiting for a request that never comes
            streamed = recorded.body.get("stream") is True and (
                reply.events is not None or reply.raw is not None
            )
            if not streamed or reply.content_type == "application/json":
                await stream.send(_json_answer(reply))
                continue
            if not await _stream_answer(stream, reply):
                return  # cut short: drop the connection mid-body


def _head(reply: Reply, content_type: str, length: int) -> bytes:
    phrase = "Overloaded" if reply.status == 529 else HTTPStatus(reply.status).phrase
    head = [f"HTTP/1.1 {reply.status} {phrase}", f"content-type: {content_type}"]
    head += [f"content-length: {length}"]
    head += [f"{name}: {value}" for name, value in reply.headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


def _json_answer(reply: Reply) -> bytes:
    payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
    return _head(reply, reply.content_type or "application/json", len(payload)) + payload


async def _stream_answer(stream: SocketStream, reply: Reply) -> bool:
    """Send the reply as an event stream; ``False`` when it was cut short."""
    events = reply.events or []
    payload = reply.raw if reply.raw is not None else sse(events)
    await stream.send(_head(reply, reply.content_type or "text/event-stream", len(payload)))
    if reply.stall_after is not None:
        await stream.send(sse(events[: reply.stall_after]))
        await anyio.sleep_forever()  # the connection stays open; the client must time out
    if reply.cut_after is None:
        await stream.send(payload)
        return True
    await stream.send(sse(events[: reply.cut_after]))
    return False


async def serve(no_reply: Reply) -> AsyncIterator[StandIn]:
    """Run a stand-in on a free 127.0.0.1 port for as long as the generator is open."""
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        anyio.create_task_group() as tg,
    ):
        port = listener.extra(SocketAttribute.local_port)
        server = StandIn(base_url=f"http://127.0.0.1:{port}", no_reply=no_reply)
        tg.start_soon(listener.serve, server.handle)
        yield server
        tg.cancel_scope.cancel()


class Collected:
    """A stream handler that keeps every piece it is handed, in order."""

    def __init__(self) -> None:
        self.deltas: list[PartDelta] = []

    async def __call__(self, delta: PartDelta) -> None:
        self.deltas.append(delta)
