"""An MCP tool call in a run's trace when the application installed the global tracer
provider (as ``configure_tracing()`` does by default): the MCP SDK's own client span, and
the trace context it sends in ``_meta``, sit under regiment's ``tools/call {tool}`` CLIENT
span, inside the call's ``execute_tool`` span.

The SDK traces through the global provider, which a process installs once: the run is a
fresh interpreter's, exporting to a real OTLP receiver in this one."""

from __future__ import annotations

import json

from tests.telemetry.otlp_receiver import OtlpReceiver
from tests.telemetry.test_configure import run_python

from .conftest import SERVER_COMMAND


def test_the_sdk_s_client_span_and_the_sent_context_join_the_run_s_trace() -> None:
    with OtlpReceiver() as receiver:
        out = run_python(
            f"""
            import json
            import anyio
            from regiment.hierarchy import Planner, Team, Worker
            from regiment.models import ScriptedModel, ToolResultPart, text_response, tool_call_response
            from regiment.telemetry import Telemetry, configure_tracing
            from regiment.tools import MCPServer

            handle = configure_tracing("mcp", endpoint={receiver.endpoint!r})  # global

            def brain(request):
                if request.role == "planner":
                    return text_response(json.dumps({{"steps": [{{"id": "s1", "description": "t"}}]}}))
                if request.role != "worker":
                    return text_response("done")
                results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
                if results:
                    return text_response(str(results[0].content))
                return tool_call_response("calc_meta_key", {{"key": "traceparent"}})

            server = MCPServer.stdio({SERVER_COMMAND!r}, name="calc", prefix="calc_")
            model = ScriptedModel(brain)
            worker = Worker(name="w", description="w", model=model, tools=[server])
            team = Team(name="t", planner=Planner(model=model), workers=[worker], telemetry=Telemetry())
            result = anyio.run(team.run, "go")
            handle.shutdown()
            print(json.dumps([result.trace_id, result.steps[0].tool_outcomes[0].content]))
            """
        )
        spans = receiver.spans()
    trace_id, content = json.loads(out)
    (call,) = [s for s in spans if s.name == "execute_tool calc_meta_key"]
    (ours,) = [s for s in spans if s.parent_span_id == call.span_id]
    assert (ours.name, ours.kind) == ("tools/call meta_key", 3)  # CLIENT: regiment's
    (sdk,) = [s for s in spans if s.parent_span_id == ours.span_id]
    assert sdk.kind == 3  # CLIENT: the SDK's span of the request it sent
    assert call.trace_id == ours.trace_id == sdk.trace_id == trace_id
    _version, sent_trace, sent_parent, _flags = content["result"].split("-")
    assert (sent_trace, sent_parent) == (trace_id, sdk.span_id)
    # the session's start is one trace: the SDK's initialize and tools/list sit inside it
    roots = sorted(s.name for s in spans if s.parent_span_id is None)
    assert roots == ["invoke_agent t", "regiment.mcp.start calc"]
    (start,) = [s for s in spans if s.name == "regiment.mcp.start calc"]
    inside = sorted(s.name for s in spans if s.parent_span_id == start.span_id)
    assert inside == ["MCP send initialize", "MCP send tools/list"]
    listed = start.attributes["regiment.mcp.tools"]  # the tools it gave: server_app.py's
    assert isinstance(listed, int)
    assert listed > 1
    assert start.attributes["regiment.mcp.restart"] == 0
    assert start.attributes["network.transport"] == "pipe"
    assert "error.type" not in start.attributes
