"""A ``tools/list`` that fails after ``notifications/tools/list_changed`` (an error
answer) keeps the tools listed before and asks again, with a warning: it restarted a
server that still answered (cutting the calls it ran, spending a restart)."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from regiment.tools import MCPHub, MCPServer, Toolset

pytestmark = pytest.mark.anyio

SERVER = [sys.executable, str(Path(__file__).with_name("hand_server.py")), "relist"]


class _GaveUp(logging.Handler):
    """Set once the connection logs an error: it gave up asking for the new list."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.event = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.event.set()

    async def wait(self) -> None:
        await self.event.wait()


@pytest.fixture
async def gave_up() -> AsyncIterator[_GaveUp]:
    handler = _GaveUp()
    logging.getLogger("regiment.tools.mcp").addHandler(handler)
    yield handler
    logging.getLogger("regiment.tools.mcp").removeHandler(handler)


@pytest.mark.parametrize("failures", [1, 9])
async def test_a_failed_relist_keeps_the_old_list_and_asks_again(
    failures: int, gave_up: _GaveUp, caplog: pytest.LogCaptureFixture
) -> None:
    async with MCPHub.open() as hub:
        live = await hub.worker_tools(Toolset("w"), [MCPServer.stdio(SERVER, name="re")])
        (connection,) = live.connections
        first = await live.current().call("pid", {}, call_id="p1")
        version = connection.version
        with caplog.at_level(logging.WARNING, logger="regiment.tools.mcp"):
            changed = await live.current().call("change", {"failures": failures}, call_id="c")
            assert (changed.is_error, changed.content) == (False, "changed")
            # the call returned with the old list: waiting for the new one ended at the failure
            assert set(live.current().names) == {"change", "pid"}
            if failures == 1:  # listed again 0.5 s later
                with anyio.fail_after(10):
                    await connection.wait_listed(version)
                assert set(live.current().names) == {"change", "pid", "later"}
            else:  # 4 tries (0.5 + 1 + 2 s apart), then the old list stands
                with anyio.fail_after(10):
                    await gave_up.wait()
                assert set(live.current().names) == {"change", "pid"}
        second = await live.current().call("pid", {}, call_id="p2")
        assert second.content == first.content  # the same process: not restarted
        assert connection.restarts == 0
    said = [r.getMessage() for r in caplog.records]
    assert (
        "listing the tools of MCP server 're' failed (MCPError: list not ready); its tools as "
        in said[0]
    )
    assert "and it is asked again in 0.5 s" in said[0]
    if failures > 1:
        assert "failed 4 times (last: MCPError: list not ready)" in said[-1]
