"""MCP servers of a Ray-placed worker: started in its replica with the team, their
tools known to the planner, called from the replica's steps, stopped with the team."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import psutil
import pytest

from regiment.errors import ConfigError
from regiment.journal import SqliteJournal, ToolCallStarted
from regiment.tools import MCPServer

from ..mcp_tools.conftest import alive
from ._ray_mcp_team import CALLS, SERVER_COMMAND, clerk_team, planner_requests

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_replica_starts_the_workers_mcp_servers_and_its_steps_call_them(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    server = MCPServer.stdio(SERVER_COMMAND, prefix="m_", include=["add", "meta_key", "pid"])
    path = tmp_path / "runs.db"
    planner_requests.clear()
    async with clerk_team(server).start(journal=path) as running:
        result = await running.run("use the tools")
        (step,) = result.steps
        add, key, pid = (outcome.content for outcome in step.tool_outcomes)
        assert isinstance(pid, dict) and isinstance(pid["result"], int)
        server_pid = pid["result"]
        # the server is a process of the replica, on the Ray node, not of the team's process
        assert psutil.Process(server_pid).ppid() not in (os.getpid(), 0)
    assert alive([server_pid]) == []  # stopped with the replica, when the team stopped
    assert result.status == "completed"
    assert add == {"result": 5}
    # the planner was told the tools the replica listed: include= and prefix= applied
    (plan,) = planner_requests
    told = f"{plan.system} {plan.messages}"
    assert all(name in told for name in CALLS) and "m_shout" not in told
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    intents = [r for r in records if isinstance(r, ToolCallStarted)]
    assert [r.tool for r in intents] == list(CALLS)  # journaled in the team's process
    assert key == {"result": intents[1].idempotency_key}  # what the server got in _meta
    assert intents[1].idempotency_key == f"{result.run_id}/v1/s1/1"


async def test_a_server_that_cannot_start_on_the_replica_fails_team_start(
    ray_session: ModuleType,
) -> None:
    ghost = MCPServer.stdio(["/nonexistent/mcp-server", "--x"], name="ghost")
    with pytest.raises(ConfigError) as failed:
        async with clerk_team(ghost).start():
            raise AssertionError("the team started without its MCP server")
    assert str(failed.value).startswith(
        "worker 'clerk' (on its Ray replica) cannot start: MCP server 'ghost' "
        "(/nonexistent/mcp-server --x) could not be started: FileNotFoundError"
    )
