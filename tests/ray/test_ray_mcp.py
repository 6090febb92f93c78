"""MCP servers of a Ray-placed worker: started in its replica with the team, their
tools known to the planner, called from the replica's steps, stopped with the team."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from types import ModuleType
from typing import cast

import anyio
import psutil
import pytest
from anyio.abc import SocketAttribute, SocketListener

from regiment.config import load_team
from regiment.errors import ConfigError
from regiment.hierarchy import ApprovalRequested, RunCompleted, RunResult, StepCompleted, Team
from regiment.journal import SqliteJournal, ToolCallStarted
from regiment.tools import Approve, EditArguments, MCPServer

from ..mcp_tools.conftest import SERVER_COMMAND, alive, start_http, stop
from ..telemetry.otlp_receiver import OtlpReceiver
from ._ray_mcp_team import CALLS, clerk_team, empty, growing_team, planner_requests

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_replica_starts_the_workers_mcp_servers_and_its_steps_call_them(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    """A stdio server (a process of the replica) and an HTTP one (reached from it)."""
    stdio = MCPServer.stdio(SERVER_COMMAND, prefix="m_", include=["add", "meta_key", "pid"])
    process, port = start_http()
    try:
        http = MCPServer.http(f"http://127.0.0.1:{port}/mcp", prefix="h_", include=["shout"])
        with OtlpReceiver() as receiver:
            team = clerk_team(stdio, http, otlp_endpoint=receiver.endpoint)
            result, server_pid = await _journaled_run(team, tmp_path / "runs.db")
            spans = receiver.spans()  # leaving the team flushed the replica's
    finally:
        stop(process)
    # each call is an execute_tool span of the replica's, with the MCP attributes
    called = {s.name: s for s in spans if s.name.startswith("execute_tool")}
    assert set(called) == {f"execute_tool {name}" for name in CALLS}
    add_span = called["execute_tool m_add"]
    assert add_span.resource["service.name"] == "regiment-ray:clerk"
    assert add_span.attributes["mcp.method.name"] == "tools/call"
    assert add_span.attributes["network.transport"] == "pipe"
    assert called["execute_tool h_shout"].attributes["network.transport"] == "tcp"
    # inside it, the request's CLIENT span, the replica's too (its _meta names it)
    (client,) = [s for s in spans if s.parent_span_id == add_span.span_id]
    assert (client.name, client.kind, client.resource["service.name"]) == (
        "tools/call add",
        3,  # CLIENT
        "regiment-ray:clerk",
    )
    assert alive([server_pid]) == []  # stopped with the replica, when the team stopped
    assert result.status == "completed"
    (step,) = result.steps
    add, key, _, shout = (outcome.content for outcome in step.tool_outcomes)
    assert add == {"result": 5}
    assert shout == {"result": "HI"}
    # the planner was told the tools the replica listed: include= and prefix= applied
    (plan,) = planner_requests
    told = f"{plan.system} {plan.messages}"
    assert all(name in told for name in CALLS)
    assert "m_shout" not in told
    assert "h_add" not in told
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    try:
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    intents = [r for r in records if isinstance(r, ToolCallStarted)]
    assert [r.tool for r in intents] == list(CALLS)  # journaled in the team's process
    assert key == {"result": intents[1].idempotency_key}  # what the server got in _meta
    assert intents[1].idempotency_key == f"{result.run_id}/v1/s1/1"


async def _journaled_run(team: Team, journal: Path) -> tuple[RunResult, int]:
    """The team's run, and the process id of its stdio server (read while it runs)."""
    planner_requests.clear()
    async with team.start(journal=journal) as running:
        result = await running.run("use the tools")
        server_pid = _server_pid(result)
        # the server is a process of the replica, on the Ray node, not of the team's process
        assert psutil.Process(server_pid).ppid() not in (os.getpid(), 0)
    return result, server_pid


async def test_a_server_that_cannot_start_on_the_replica_fails_team_start(
    ray_session: ModuleType,
) -> None:
    ghost = MCPServer.stdio(["/nonexistent/mcp-server", "--x"], name="ghost")
    with pytest.raises(ConfigError) as failed:
        async with clerk_team(ghost).start():
            raise AssertionError("the team started without its MCP server")
    message = str(failed.value)
    assert message.startswith(
        "worker 'clerk' (on its Ray replica) cannot start: MCP server 'ghost' "
        "(/nonexistent/mcp-server --x) could not be started: FileNotFoundError"
    )
    # a path valid beside the team's process may not be on the node: the message says where
    assert "a stdio server runs on the Ray node " in message
    assert "in the replica's working directory /" in message


async def test_a_team_files_mcp_servers_run_on_the_replica_and_their_calls_ask_approval(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    """``[[workers.mcp]]`` on a ``kind = "ray"`` worker: the replica rebuilds the worker
    from the file, servers included. ``require_approval`` names one of their tools (the
    team's process knows it from the replica's list): its call pauses the run, and the
    edited call runs on the replica once the run is resumed."""
    path = tmp_path / "team.toml"
    path.write_text(TEAM_FILE.format(command=json.dumps(list(SERVER_COMMAND))))
    async with load_team(path).start(journal=tmp_path / "runs.db") as running:
        paused = await running.run("use the tools")
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        assert (request.tool_name, request.arguments) == ("m_add", {"a": 2, "b": 3})
        assert request.worker == "office/clerk"
        edit = EditArguments(arguments={"a": 10, "b": 5})
        await running.approve(request.request_id, edit, by="ana")
        result = await running.resume(paused.run_id)
    assert result.status == "completed"
    (step,) = result.steps
    add, key, _pid = (outcome.content for outcome in step.tool_outcomes)
    assert add == {"result": 15}  # the edited call ran once, on the replica
    assert key == {"result": f"{result.run_id}/v1/s1/1"}


async def test_a_replica_ray_restarted_starts_its_mcp_servers_again(
    ray_session: ModuleType,
) -> None:
    """The servers died with their replica (killed between two runs); Ray restarted it,
    and its next step finds them started again, instead of a worker with no MCP tools."""
    stdio = MCPServer.stdio(SERVER_COMMAND, prefix="m_", include=["add", "meta_key", "pid"])
    async with clerk_team(stdio, max_restarts=1).start() as running:
        first = await running.run("use the tools")
        killed = _server_pid(first)
        os.kill(psutil.Process(killed).ppid(), signal.SIGKILL)  # the replica
        second = await running.run("use the tools")
        again = _server_pid(second)
        assert psutil.Process(again).ppid() not in (os.getpid(), 0)
    assert second.status == "completed"
    assert second.steps[0].tool_outcomes[0].content == {"result": 5}
    assert again != killed
    assert alive([again]) == []


async def test_cancelling_a_run_mid_call_on_a_replica_keeps_its_mcp_session(
    ray_session: ModuleType,
) -> None:
    """The cancel reaches the replica's call (the server is told), and the session goes
    on: the next run's calls reach the same server process, not a restarted one."""
    stdio = MCPServer.stdio(SERVER_COMMAND, prefix="m_", include=["add", "meta_key", "pid", "hang"])
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        clerk_team(stdio).start() as running,
    ):
        before = _server_pid(await running.run("use the tools"))
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(running.run, f"hang on port {port}")
            with anyio.fail_after(60):
                stream = await cast(SocketListener, listener.listeners[0]).accept()
            await stream.aclose()  # the call is in the server, on the replica's session
            tg.cancel_scope.cancel()
        after = await running.run("use the tools")
    assert after.status == "completed"
    assert _server_pid(after) == before


async def test_a_tool_a_replicas_server_adds_later_asks_the_teams_approval(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    """``g_fresh`` appears once ``g_grow`` ran (``tools/list_changed`` on the replica);
    the server's rule makes its calls need approval, so the team's process must know it:
    the run pauses for it (it was denied, as a tool the team's process did not have)."""
    grower = MCPServer.stdio(SERVER_COMMAND, prefix="g_", include=None, requires_approval=empty)
    async with clerk_team(grower).start(journal=tmp_path / "runs.db") as running:
        grown = await running.run("grow a tool")
        assert grown.steps[0].output == "grown"
        paused = await running.run("call the fresh tool")
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        assert request.tool_name == "g_fresh"
        await running.approve(request.request_id, Approve(), by="ana")
        done = await running.resume(paused.run_id)
    assert done.steps[0].output == 'fresh: {"result":"grown"}'  # it ran, on the replica


async def test_a_tool_a_replicas_server_adds_during_a_step_asks_the_teams_approval(
    probe: tuple[str, object],
) -> None:
    """``g_fresh`` appears while s1 still runs on the replica, and s2 starts there after
    that: the team's process, which hears of changed tool lists as a step ends, has not
    heard of it when s2's call asks for approval. It asks the replica for its lists then,
    rather than denying the call as one of a tool it does not have."""
    name, handle = probe
    grower = MCPServer.stdio(SERVER_COMMAND, prefix="g_", include=None, requires_approval=empty)
    asked: list[ApprovalRequested] = []
    team = growing_team(name, grower)
    async with team.start() as running, running.stream("grow, then call it") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                asked.append(event)
                await running.approve(event.request.request_id, Approve(), by="ana")
            elif isinstance(event, StepCompleted) and event.step_id == "s2":
                await handle.release.remote()  # type: ignore[attr-defined]  # s1 ends
            elif isinstance(event, RunCompleted):
                result = event.result
    outputs = {step.step_id: step.output for step in result.steps}
    assert outputs["s2"] == 'fresh: {"result":"grown"}'  # approved, and it ran on the replica
    assert [e.request.tool_name for e in asked] == ["g_fresh"]


def _server_pid(result: RunResult) -> int:
    """The stdio server's process id, as its ``m_pid`` tool told the run's one step."""
    (step,) = result.steps
    outcome = next(o.content for o in step.tool_outcomes if o.tool == "m_pid")
    assert isinstance(outcome, dict)
    pid = outcome["result"]
    assert isinstance(pid, int)
    return pid


TEAM_FILE = """
name = "office"
model = "scripted"
brain = "tests.ray._ray_mcp_team:brain"

[[workers]]
name = "clerk"
description = "Calls the MCP tools."
require_approval = ["m_add"]

[[workers.mcp]]
command = {command}
include = ["add", "meta_key", "pid"]
prefix = "m_"

[workers.placement]
kind = "ray"
num_cpus = 0
"""
