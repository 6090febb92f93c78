"""The ``tools/call {tool}`` CLIENT span carries what the OpenTelemetry MCP conventions
ask for that a client can know: the request's ``jsonrpc.request.id``, and for a call the
server answered with a JSON-RPC error, ``rpc.response.status_code`` and an ``error.type``
of that code; over HTTP, ``network.protocol.version`` too. Exported with the real OTLP
exporter to a loopback receiver, on a team whose tracer provider is not the global one
(so the MCP SDK's own span, which has an id, is not there to stand in for ours)."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart
from regiment.models import tool_call_response as call
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import MCPServer
from tests.telemetry.otlp_receiver import OtlpReceiver, ReceivedSpan

from .brain import Brain, WorkFn, plan_json
from .conftest import SDK_HTTP_LEAKS, SERVER_COMMAND

pytestmark = [pytest.mark.anyio, *SDK_HTTP_LEAKS]


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> MCPServer:
    if request.param == "stdio":
        return MCPServer.stdio(SERVER_COMMAND, name="calc", prefix="calc_")
    return MCPServer.http(request.getfixturevalue("http_url"), name="calc", prefix="calc_")


async def _traced_run(server: MCPServer, work: WorkFn, steps: int = 1) -> tuple[ReceivedSpan, ...]:
    plan = plan_json(*({"id": f"s{i}", "description": f"step {i}"} for i in range(steps)))
    model = ScriptedModel(Brain([plan], work=work))
    worker = Worker(name="w", description="calls", model=model, tools=[server])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    with OtlpReceiver() as receiver:
        handle = configure_tracing("mcp", endpoint=receiver.endpoint, set_global=False)
        await dataclasses.replace(team, telemetry=Telemetry(handle.provider)).run("go")
        handle.shutdown()
        return receiver.spans()


async def test_each_call_s_client_span_has_the_json_rpc_id_it_was_sent_with(
    server: MCPServer,
) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        calls = sum(1 for m in request.messages if m.role == "assistant")
        return call("calc_add", {"a": calls, "b": 1}) if calls < 3 else "added"

    spans = await _traced_run(server, work, steps=2)
    clients = [s for s in spans if s.name == "tools/call add"]
    assert len(clients) == 6  # three calls in each of two steps
    ids = [s.attributes.get("jsonrpc.request.id") for s in clients]
    assert all(isinstance(i, str) and i for i in ids), ids
    assert len(set(ids)) == 6  # one session, so each request has an id of its own
    # the list requests of the session's start are not calls: no call took their ids
    (start,) = [s for s in spans if s.name == "regiment.mcp.start calc"]
    assert "jsonrpc.request.id" not in start.attributes
    over_http = clients[0].attributes["network.transport"] == "tcp"
    version = clients[0].attributes.get("network.protocol.version")
    assert version == ("1.1" if over_http else None)


async def test_a_json_rpc_error_answer_is_its_code_on_the_client_span(server: MCPServer) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if results:
            return str(results[0].content)
        return call("calc_protocol_error", {"code": -32042})

    spans = await _traced_run(server, work)
    (client,) = [s for s in spans if s.name == "tools/call protocol_error"]
    assert client.status_code == 2  # ERROR: every JSON-RPC error code is one, for a client
    assert client.attributes["error.type"] == "-32042"
    assert client.attributes["rpc.response.status_code"] == "-32042"
    assert isinstance(client.attributes.get("jsonrpc.request.id"), str)
    (tool,) = [s for s in spans if s.name == "execute_tool calc_protocol_error"]
    assert tool.attributes["regiment.tool.outcome"] == "ToolError"  # as before: unchanged


async def test_an_mcp_tool_s_span_has_its_server_s_description_and_the_run_is_one_tree(
    server: MCPServer,
) -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return str(results[0].content) if results else call("calc_add", {"a": 2, "b": 3})

    spans = await _traced_run(server, work)
    (tool,) = [s for s in spans if s.name == "execute_tool calc_add"]
    # What the server lists for the tool, as the model is told it (capture is off).
    assert tool.attributes["gen_ai.tool.description"] == "Add two integers."
    (client,) = [s for s in spans if s.name == "tools/call add"]
    assert client.parent_span_id == tool.span_id
    # The run's spans are one tree: every parent was exported, one root, one trace (the
    # session's start is a short trace of its own).
    run = [s for s in spans if not s.name.startswith("regiment.mcp.start")]
    start = {s.trace_id for s in spans if s.name.startswith("regiment.mcp.start")}
    ids = {s.span_id for s in run}
    assert [s.name for s in run if s.parent_span_id is None] == ["invoke_agent t"]
    assert all(s.parent_span_id in ids for s in run if s.parent_span_id is not None)
    assert len({s.trace_id for s in run}) == 1
    assert not start & {s.trace_id for s in run}
