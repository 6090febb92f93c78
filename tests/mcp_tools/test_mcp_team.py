"""MCP servers through real Team runs: a ScriptedModel worker calls their tools like
any other tool, the planner sees them, and stopping or cancelling leaks nothing."""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from pathlib import Path
from typing import cast

import anyio
import psutil
import pytest
from anyio.abc import SocketAttribute, SocketListener
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ConfigError
from regiment.hierarchy import Planner, Team, Worker
from regiment.journal import SqliteJournal, ToolCallStarted
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.telemetry import SpanCollector, Telemetry, configure_tracing
from regiment.tools import MCPServer, Tool
from tests.telemetry.otlp_receiver import OtlpReceiver

from .brain import Brain, WorkFn, plan_json
from .conftest import SDK_HTTP_LEAKS, SERVER_COMMAND, alive, server_children

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> MCPServer:
    if request.param == "stdio":
        return MCPServer.stdio(SERVER_COMMAND, name="calc", prefix="calc_")
    return MCPServer.http(request.getfixturevalue("http_url"), name="calc", prefix="calc_")


def team_of(
    work: WorkFn, *workers_tools: list[Tool[..., object] | MCPServer], plans: list[str]
) -> tuple[Team, Brain]:
    brain = Brain(plans, work=work)
    model = ScriptedModel(brain)
    workers = [
        Worker(name=f"w{i}", description="adds numbers", model=model, tools=tools)
        for i, tools in enumerate(workers_tools)
    ]
    return Team(name="t", planner=Planner(model=model), workers=workers), brain


async def test_a_worker_corrects_a_schema_invalid_call_and_gets_the_sum(server: MCPServer) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        calls = sum(1 for m in request.messages if m.role == "assistant")
        if calls == 0:
            return tool_call_response("calc_add", {"a": 2})  # "b" is missing
        if calls == 1:
            return tool_call_response("calc_add", {"a": 2, "b": 40})
        return f"the sum is {results[0].content}"

    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team, brain = team_of(work, [server], plans=[plan_json({"description": "add 2 and 40"})])
    team = Team(
        name=team.name, planner=team.planner, workers=team.workers, telemetry=Telemetry(provider)
    )
    result = await team.run("add two numbers")
    provider.shutdown()

    (step,) = result.steps
    assert step.output == 'the sum is {"result":42}'
    first, second = step.tool_outcomes
    assert first.is_error
    assert "b: Field required, send an integer" in str(first.content)
    assert (second.is_error, second.content) == (False, {"result": 42})
    planner_prompt = brain.plan_requests[0].system
    assert "calc_add" in planner_prompt  # the planner is told the server's tools

    spans = [s for s in collector.spans() if s.name == "execute_tool calc_add"]
    assert len(spans) == 2
    called = dict(spans[1].attributes or {})
    assert called["mcp.method.name"] == "tools/call"
    assert called["regiment.mcp.server"] == "calc"
    assert called["network.transport"] in ("pipe", "tcp")
    assert "mcp.protocol.version" in called
    invalid = dict(spans[0].attributes or {})
    assert "mcp.method.name" not in invalid  # rejected before anything was sent
    assert invalid["regiment.tool.outcome"] == "invalid_arguments"


async def test_cancelling_a_run_mid_call_keeps_the_session_and_leaks_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MCPServer.stdio(SERVER_COMMAND, name="calc")
    pids: list[int] = []

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description.startswith("watch"):
            return tool_call_response("watch", {"port": port})
        if not results:
            return tool_call_response("pid", {})
        pids.append(int(json.loads(results[0].content)["result"]))
        return "pid noted"

    plans = [plan_json({"description": "watch on port"}), plan_json({"description": "pid"})]
    team, _ = team_of(work, [server], plans=plans)
    caplog.set_level(logging.WARNING)
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(SocketAttribute.local_port)
        async with team.start() as running:
            async with anyio.create_task_group() as tg:
                tg.start_soon(running.run, "watch, please")
                with anyio.fail_after(30):
                    stream = await cast(SocketListener, listener.listeners[0]).accept()
                    said = await stream.receive()  # the call is in the server now
                tg.cancel_scope.cancel()
            with anyio.fail_after(10):  # the server got notifications/cancelled for it
                while not said.endswith(b"cancelled\n"):
                    said += await stream.receive()
            await stream.aclose()
            assert said == b"started\ncancelled\n"
            result = await running.run("tell the pid")  # the same session, after the cancel
            assert result.steps[0].output == "pid noted"
            assert alive(pids) == pids
            assert len(server_children()) == 1
    assert alive(pids) == []
    assert server_children() == []
    assert not [r for r in caplog.records if "different task" in r.getMessage()]
    assert not [r for r in caplog.records if "restarting" in r.getMessage()]


def add(a: int, b: int) -> int:
    """A local tool named like the server's."""
    return a + b


async def test_workers_share_one_server_and_a_name_clash_fails_team_start() -> None:
    shared = MCPServer.stdio(SERVER_COMMAND, name="calc", include=["add", "pid"], prefix="m_")

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "unused"

    team, _ = team_of(work, [shared], [shared, Tool(add)], plans=[])
    async with team.start():
        assert len(server_children()) == 1  # started once per running team
    assert server_children() == []

    clashing = MCPServer.stdio(SERVER_COMMAND, name="calc")
    team, _ = team_of(work, [Tool(add), clashing], plans=[])
    with pytest.raises(
        ConfigError, match="'add' comes from both the tools of 'w0' and MCP server 'calc'"
    ):
        async with team.start():
            pass
    assert server_children() == []


async def test_leaving_team_start_reaps_five_servers_even_ones_that_ignore_sigterm() -> None:
    polite = [MCPServer.stdio(SERVER_COMMAND, prefix=f"s{i}_") for i in range(3)]
    stubborn = [MCPServer.stdio([*SERVER_COMMAND, "--stubborn"], prefix=f"s{i}_") for i in (3, 4)]

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "unused"

    team, _ = team_of(work, [*polite], [*stubborn], plans=[])
    async with team.start():
        running = server_children()
        pids = [p.pid for p in running]
        assert len(pids) == 5
        assert sum("--stubborn" in p.cmdline() for p in running) == 2
        watchdogs = [w for p in running for w in p.children()]  # on Linux, one each
    assert alive(pids) == []  # reaped: stdin closed, SIGTERM, then SIGKILL for the stubborn
    await anyio.to_thread.run_sync(psutil.wait_procs, watchdogs)  # each ends with its server
    assert server_children() == []


async def test_a_child_the_server_leaves_running_is_stopped_with_it(tmp_path: Path) -> None:
    # The server starts a child in its process group and exits when its stdin closes,
    # leaving the child: the SDK signals the group only for a server still running 2 s
    # later, so the child ran on as long as this process did.
    pid_file = tmp_path / "child.pid"
    line = f"sleep 300 & echo $! > {pid_file}; exec {' '.join(SERVER_COMMAND)}"

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "unused"

    team, _ = team_of(work, [MCPServer.stdio(["sh", "-c", line])], plans=[])
    async with team.start():
        child = psutil.Process(int(pid_file.read_text()))
        assert _runs(child)
    for _ in range(600):  # up to 30 s: the watchdog's grace is 2 s; a loaded machine is slow
        if not _runs(child):
            break
        await anyio.sleep(0.05)
    assert not _runs(child)


def _runs(process: psutil.Process) -> bool:
    """Whether ``process`` still runs (a zombie no one reaps has ended)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_tool_that_one_step_adds_is_there_for_the_step_after_it(
    server: MCPServer,
) -> None:
    name = f"grown_{uuid.uuid4().hex[:8]}"  # the HTTP server lives for the module

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if results:
            return str(results[0].content)
        if description.startswith("grow"):
            return tool_call_response("calc_grow", {"name": name})
        return tool_call_response(f"calc_{name}", {})

    plan = plan_json(
        {"id": "s1", "description": "grow a tool"},
        {"id": "s2", "description": "use it", "depends_on": ["s1"]},
    )
    team, _ = team_of(work, [server], plans=[plan])
    result = await team.run("grow a tool, then use it")
    used = result.steps[1].tool_outcomes[0]
    assert (used.is_error, used.content) == (False, {"result": "grown"})


async def test_a_journaled_call_sends_the_journal_s_idempotency_key(
    server: MCPServer, tmp_path: Path
) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return str(results[0].content) if results else tool_call_response("calc_meta_key", {})

    team, _ = team_of(work, [server], plans=[plan_json({"id": "s1", "description": "key"})])
    path = tmp_path / "runs.db"
    async with team.start(journal=path) as running:
        result = await running.run("send a key")
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    (intent,) = [r for r in records if isinstance(r, ToolCallStarted)]
    assert intent.idempotency_key == f"{result.run_id}/v1/s1/0"
    (sent,) = result.steps[0].tool_outcomes
    assert sent.content == {"result": intent.idempotency_key}  # what the server got in _meta


async def test_the_planner_is_told_a_tool_a_server_added_since_the_last_run() -> None:
    """A server that adds a tool (``tools/list_changed``): the next run's planner is told
    it (it was told the list of the team's first run, for good)."""

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "learned" if results else tool_call_response("learn", {})

    server = MCPServer.stdio(SERVER_COMMAND, name="calc")
    plan = plan_json({"description": "learn a tool"})
    team, brain = team_of(work, [server], plans=[plan, plan])
    async with team.start() as running:
        assert (await running.run("learn")).status == "completed"
        await running.run("learn again")
    first, second = (request.system for request in brain.plan_requests)
    assert "taught" not in first
    assert "taught" in second  # the tools line of w0 names it now


async def test_a_call_is_a_client_span_whose_context_it_sends_in_meta(server: MCPServer) -> None:
    """As the OpenTelemetry MCP conventions have it, each request is a CLIENT span
    ``tools/call {tool}`` (inside the call's ``execute_tool`` span), and its W3C trace
    context goes in ``params._meta``: a traced server's spans are its children."""

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if results:
            return str(results[0].content)
        return tool_call_response("calc_meta_key", {"key": "traceparent"})

    team, _ = team_of(work, [server], plans=[plan_json({"id": "s1", "description": "trace"})])
    with OtlpReceiver() as receiver:
        handle = configure_tracing("mcp", endpoint=receiver.endpoint, set_global=False)
        result = await dataclasses.replace(team, telemetry=Telemetry(handle.provider)).run("go")
        handle.shutdown()
        spans = receiver.spans()
    (call,) = [s for s in spans if s.name == "execute_tool calc_meta_key"]
    (client,) = [s for s in spans if s.parent_span_id == call.span_id]
    assert (client.name, client.kind) == ("tools/call meta_key", 3)  # 3: CLIENT
    assert {k: client.attributes.get(k) for k in _CLIENT_KEYS} == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "meta_key",  # the server's name of it, not the prefixed one
        "network.transport": call.attributes["network.transport"],  # pipe, or tcp
        "regiment.mcp.server": "calc",
        "error.type": None,
    }
    assert client.attributes["mcp.protocol.version"]
    # over HTTP, the session id the server gave (stdio has none)
    over_http = call.attributes["network.transport"] == "tcp"
    assert bool(client.attributes.get("mcp.session.id")) == over_http
    (sent,) = result.steps[0].tool_outcomes
    assert isinstance(sent.content, dict)
    version, trace_id, parent, _flags = str(sent.content["result"]).split("-")
    assert (version, trace_id, parent) == ("00", result.trace_id, client.span_id)
    assert call.trace_id == result.trace_id


async def test_a_call_the_server_marks_failed_is_an_error_client_span(server: MCPServer) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if results:
            return "it refused"
        return tool_call_response("calc_refuse", {"reason": "not today"})

    team, _ = team_of(work, [server], plans=[plan_json({"id": "s1", "description": "refuse"})])
    with OtlpReceiver() as receiver:
        handle = configure_tracing("mcp", endpoint=receiver.endpoint, set_global=False)
        await dataclasses.replace(team, telemetry=Telemetry(handle.provider)).run("go")
        handle.shutdown()
        spans = receiver.spans()
    (client,) = [s for s in spans if s.name == "tools/call refuse"]
    assert (client.status_code, client.attributes["error.type"]) == (2, "tool_error")  # 2: ERROR


_CLIENT_KEYS = (
    "mcp.method.name",
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "network.transport",
    "regiment.mcp.server",
    "error.type",
)
