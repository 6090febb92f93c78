"""A client that hangs up halfway through sending its body (under real uvicorn): nothing
starts, the service goes on, and it is logged as what it is (INFO), not as uvicorn's
ERROR "Exception in ASGI application" with a ClientDisconnect traceback."""

from __future__ import annotations

import logging
import socket
from urllib.parse import urlsplit

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import MemoryRunStore, create_app
from tests.serve.teams import support_team

pytestmark = pytest.mark.anyio


class _Told(logging.Handler):
    """Sets ``told`` when the service logs that a client hung up before its body came."""

    def __init__(self, told: anyio.Event) -> None:
        super().__init__()
        self.told = told

    def emit(self, record: logging.LogRecord) -> None:
        if "hung up before" in record.getMessage():
            self.told.set()  # (logged on the loop's thread: uvicorn serves in the test's loop)


def _send_half_and_hang_up(url: str, path: str) -> None:
    """POST ``path`` announcing 100 bytes of body, send 12, and close."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "", parts.port or 80)) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"goal": "ab')


async def _hang_up_on(path: str, store: MemoryRunStore, told: anyio.Event) -> None:
    async with (
        serving(create_app(support_team(), store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        assert (await c.get("/health")).status_code == 200
        await anyio.to_thread.run_sync(_send_half_and_hang_up, url, path)
        with anyio.fail_after(10):  # the server has read to the hang-up once it logs it
            await told.wait()
        assert (await c.get("/health")).status_code == 200


@pytest.mark.parametrize("path", ["/runs", "/runs?wait=true", "/approvals/apr-1"])
async def test_a_body_cut_short_by_a_hang_up_starts_nothing_and_is_no_error(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    store, told = MemoryRunStore(), anyio.Event()
    handler = _Told(told)
    logging.getLogger("regiment.serve").addHandler(handler)
    try:
        await _hang_up_on(path, store, told)
    finally:
        logging.getLogger("regiment.serve").removeHandler(handler)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []  # it was 'Exception in ASGI application' with a traceback
    said = [r for r in caplog.records if "hung up before" in r.getMessage()]
    assert [(r.name, r.levelname) for r in said] == [("regiment.serve", "INFO")]
    assert "12 bytes came" in said[0].getMessage()
    assert store.list() == []  # no run started
