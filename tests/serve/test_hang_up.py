"""An event stream whose reader hangs up mid-burst is written to no more (under uvicorn)."""

from __future__ import annotations

import logging
import socket
from urllib.parse import urlsplit

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.serve import create_app
from tests.hierarchy.brains import Brain, plan_json

pytestmark = pytest.mark.anyio

STEPS = 100  # ~200 events, written in one burst to a reader that connects after the run


def _wide_team() -> Team:
    plan = plan_json(*({"id": f"s{i}", "description": f"part {i}"} for i in range(STEPS)))
    model = ScriptedModel(Brain([plan]))
    worker = Worker(name="clerk", description="Does parts.", model=model)
    return Team(name="wide", planner=Planner(model=model, max_steps=STEPS), workers=[worker])


def _read_one_frame_and_hang_up(url: str, path: str) -> bytes:
    """A reader in another thread: it takes the first frame, then closes with the rest
    of the burst unread (the server's next writes fail)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "", parts.port or 80)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
        got = b""
        while b"id: 1\r\n" not in got:
            more = sock.recv(256)
            assert more, got  # the server closed first
            got += more
        return got


async def test_a_reader_that_hangs_up_mid_burst_leaves_no_socket_noise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="asyncio")
    async with serving(create_app(_wide_team())) as url, httpx.AsyncClient(base_url=url) as c:
        done = (await c.post("/runs?wait=true", json={"goal": "do every part"})).json()
        assert done["status"] == "completed"
        path = f"/runs/{done['run_id']}/events"
        for _ in range(5):
            head = await anyio.to_thread.run_sync(_read_one_frame_and_hang_up, url, path)
            assert head.startswith(b"HTTP/1.1 200")
        assert (await c.get("/health")).status_code == 200
    noise = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert noise == []  # it was 'socket.send() raised exception.' once per frame past the 4th
