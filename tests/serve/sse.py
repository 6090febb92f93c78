"""A client-side reader of ``text/event-stream`` for the tests (the server side is sse-starlette)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx2 as httpx

__all__ = ("Frame", "frames", "run_events")


@dataclass(frozen=True)
class Frame:
    """One dispatched event, or a comment (keep-alive) when ``comment`` is set."""

    id: int | None = None
    event: str | None = None
    data: dict[str, object] | None = None
    comment: str | None = None


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The frames of a streaming response, in order, to the end of the stream."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line.startswith(":"):
            yield Frame(comment=line[1:].strip())
        elif line == "":
            if fields:
                yield Frame(
                    id=int(fields["id"]) if "id" in fields else None,
                    event=fields.get("event"),
                    data=json.loads(fields["data"]) if "data" in fields else None,
                )
            fields = {}
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


async def run_events(c: httpx.AsyncClient, run_id: str, last: int | None = None) -> list[Frame]:
    """Every event frame of ``GET /runs/{run_id}/events`` (after ``last``, as a reconnect
    with ``Last-Event-ID`` asks), read to the end of the stream; keep-alives left out."""
    headers = {} if last is None else {"Last-Event-ID": str(last)}
    async with c.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [f async for f in frames(response) if f.comment is None]
