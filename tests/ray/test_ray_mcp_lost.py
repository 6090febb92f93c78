"""MCP servers of a Ray-placed worker when things go wrong on the replica: a server
that crashes is brought back at most ``max_restarts`` times (counted on the replica);
a cancelled run's call reaches the server as ``notifications/cancelled``; and a
replica killed outright does not leave a server that ignores its stdin closing
running on the node."""

from __future__ import annotations

from types import ModuleType
from typing import cast

import anyio
import psutil
import pytest
from anyio.abc import SocketAttribute, SocketListener

from regiment.hierarchy import RunResult
from regiment.tools import MCPServer

from ..mcp_tools.conftest import SERVER_COMMAND, alive
from ._ray_mcp_team import clerk_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

_TOOLS = ["pid", "crash", "watch"]


def _said(result: RunResult) -> list[str]:
    """What each call of the run's one step returned (a failed call: its error)."""
    (step,) = result.steps
    return [str(outcome.content) for outcome in step.tool_outcomes]


def _pid(result: RunResult) -> int:
    """The server's process id, as the step's first call (``m_pid``) returned it."""
    content = result.steps[0].tool_outcomes[0].content
    assert isinstance(content, dict)
    pid = content["result"]
    assert isinstance(pid, int)
    return pid


async def test_a_crashed_server_on_a_replica_is_restarted_max_restarts_times(
    ray_session: ModuleType,
) -> None:
    server = MCPServer.stdio(SERVER_COMMAND, prefix="m_", include=_TOOLS, max_restarts=1)
    async with clerk_team(server).start() as running:
        first = await running.run("please call m_pid, m_crash, m_pid")
        second = await running.run("please call m_crash, m_pid")
    before, crashed, after = _said(first)
    assert "broke during the call" in crashed, crashed
    assert "it is started again for the next call" in crashed
    assert before != after  # started again, once
    again, refused = _said(second)
    assert "it is not started again (max_restarts=1, all used)" in again, again
    assert "already restarted 1 times (max_restarts=1)" in refused, refused


async def test_a_cancelled_run_tells_the_replicas_server_its_call_is_cancelled(
    ray_session: ModuleType,
) -> None:
    server = MCPServer.stdio(SERVER_COMMAND, prefix="m_", include=_TOOLS)
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        clerk_team(server).start() as running,
    ):
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(running.run, f"please call m_watch:{port}")
            with anyio.fail_after(60):
                stream = await cast(SocketListener, listener.listeners[0]).accept()
            async with stream:
                assert await stream.receive() == b"started\n"  # the call is in the server
                tg.cancel_scope.cancel()  # the run is cancelled
                with anyio.CancelScope(shield=True):
                    told = await stream.receive()  # the server's handler was cancelled
        after = await running.run("please call m_pid")
    assert told == b"cancelled\n"
    assert after.status == "completed"  # and the session went on


async def test_a_killed_replica_leaves_no_server_that_ignores_its_stdin_closing(
    ray_session: ModuleType,
) -> None:
    """``--stubborn`` ignores the end of its stdin and SIGTERM: nothing the replica
    does at its end could stop it, and a replica killed outright does nothing."""
    stubborn = MCPServer.stdio([*SERVER_COMMAND, "--stubborn"], prefix="m_", include=_TOOLS)
    async with clerk_team(stubborn).start() as running:
        server = psutil.Process(_pid(await running.run("please call m_pid")))
        replica = server.parent()
        assert replica is not None
        assert "ray" in " ".join(replica.cmdline()).lower()
        replica.kill()
        await anyio.to_thread.run_sync(server.wait)  # it ends: the orphan is stopped
    assert alive([server.pid]) == []
