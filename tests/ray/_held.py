"""A stand-in Messages API that holds a Ray replica's second model call, and the kill of
that replica while it holds (the lost-replica tests' common part)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import AsyncIterator

import anyio

from ..models import messages_api
from ..models.standin import Reply, StandIn, serve

__all__ = ("holding_api", "kill_the_replica_while_it_holds")


async def holding_api() -> AsyncIterator[StandIn]:
    """The first call asks for the note tool, the second is held (until the kill), a
    later one answers ``noted all``."""
    block: dict[str, object] = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "note",
        "input": {"text": "n1"},
    }
    async for server in serve(messages_api.message([{"type": "text", "text": "noted all"}])):
        server.queue(messages_api.message([block], stop_reason="tool_use"))
        server.queue(Reply(200, {}, hold=True))  # the second call: held until the kill
        yield server


async def kill_the_replica_while_it_holds(api: StandIn) -> None:
    """SIGKILL the replica whose call the stand-in holds, once it holds it."""
    with anyio.fail_after(90):
        while len(api.requests) < 2:  # woken by each request the stand-in gets
            api.received = anyio.Event()
            await api.received.wait()
    # The note tool's result, in the held call's request, names the replica's process.
    (pid,) = set(re.findall(r"noted in (\d+)", str(api.requests[1].body)))
    os.kill(int(pid), signal.SIGKILL)
