"""The stand-in model server itself: a client that goes away does not take it down."""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from .standin import Reply, serve

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "sent",
    [
        b"POST /v1/messages HTTP/1.1\r\ncontent-length: 100\r\n\r\n" + b'{"model": "m"',
        b"POST /v1/messages HTTP/1.1\r\ncontent-le",  # gone in the head
        b"",  # connected, and gone without a word
    ],
    ids=["mid-body", "mid-head", "silent"],
)
async def test_a_client_that_goes_away_leaves_the_server_serving_the_next(sent: bytes) -> None:
    # Gone mid-body, the stand-in's handler raised IncompleteRead out of its listener,
    # which ended the server, and the test that used it, with an error of its own.
    async for server in serve(Reply(200, {"ok": True})):
        host, port = server.base_url.removeprefix("http://").split(":")
        async with await anyio.connect_tcp(host, int(port)) as gone:
            if sent:
                await gone.send(sent)
        await anyio.wait_all_tasks_blocked()  # the handler has seen it go
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            answer = await client.post("/v1/messages", json={"model": "m"})
        assert (answer.status_code, answer.json()) == (200, {"ok": True})
        assert [r.body for r in server.requests] == [{"model": "m"}]
