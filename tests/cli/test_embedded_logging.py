"""``regiment mcp --http`` and ``regiment serve`` run inside a program (``run_async``)
leave its logging as they found it.

``mcp --http`` gave uvicorn its own logging config (``log_level="warning"``, no
``log_config=None``): uvicorn's ``dictConfig`` put its handlers on ``uvicorn`` and
``uvicorn.access`` and set ``uvicorn.error`` to WARNING for the whole process, so a
``regiment serve`` started later in it never said "Uvicorn running on". uvicorn's
records now reach the command's stderr through regiment's own handler, only while it
serves, one line each."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import anyio
import pytest

from tests.serve.cli_serving import MCP_LISTENING, Log, in_process

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

REFUND = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml")
NAMES = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")

_State = dict[str, tuple[int, list[logging.Handler], bool, bool]]


def _state() -> _State:
    """Level, handlers, propagation and disabled flag of the root and uvicorn's loggers."""
    return {
        name: (lg.level, list(lg.handlers), lg.propagate, lg.disabled)
        for name in NAMES
        for lg in [logging.getLogger(name)]
    }


async def _served(argv: list[str], err: Log) -> str:
    """Run ``argv`` in this process until it listens, send it a request that is not
    HTTP (uvicorn warns of it), stop it; its stderr."""
    async with (
        in_process(argv, err),
        await anyio.connect_tcp("127.0.0.1", err.port) as garbage,
    ):
        await garbage.send(b"\x00\x01 not http\r\n\r\n")
        with anyio.fail_after(30):
            await garbage.receive()  # uvicorn's 400: it has logged its warning
    return err.getvalue()


@pytest.mark.parametrize(
    ("argv", "listening"),
    [
        (["mcp", REFUND, "--http", "0", "--model", "scripted"], MCP_LISTENING),
        (["serve", REFUND, "--port", "0", "--model", "scripted"], None),
    ],
    ids=["mcp-http", "serve"],
)
async def test_serving_in_process_leaves_the_loggers_as_they_were(
    argv: list[str], listening: re.Pattern[str] | None
) -> None:
    before = _state()
    said = await _served(argv, Log(listening) if listening is not None else Log())
    assert _state() == before
    warned = [line for line in said.splitlines() if "Invalid HTTP request received" in line]
    assert len(warned) == 1, said  # on the command's stderr, once, in regiment's format
    assert " WARNING uvicorn.error: " in warned[0]


async def test_a_serve_after_mcp_http_still_says_it_listens() -> None:
    await _served(["mcp", REFUND, "--http", "0", "--model", "scripted"], Log(MCP_LISTENING))
    said = await _served(["serve", REFUND, "--port", "0", "--model", "scripted"], Log())
    assert "Uvicorn running on http://127.0.0.1:" in said
