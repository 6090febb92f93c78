"""Records of the ``regiment`` loggers carry the trace and span they were logged in,
locally (``record.trace_id`` / ``record.span_id``) and over OTLP (``/v1/logs``)."""

from __future__ import annotations

import json
import logging

import pytest

from regiment.hierarchy import Planner, RunResult, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry, TraceContextHandler, configure_tracing
from regiment.tools import tool

from .otlp_receiver import OtlpReceiver, ReceivedLog, ReceivedSpan

pytestmark = pytest.mark.anyio


@tool
def lookup(customer: str) -> str:
    """Find a customer."""
    raise ValueError("the customer service is down")


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response(json.dumps({"steps": [{"id": "s1", "description": "look up"}]}))
    if request.role == "worker":
        if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
            return text_response("could not look ann up")
        return tool_call_response("lookup", {"customer": "ann"})
    return text_response("answer")


async def _run(
    logs: bool,
) -> tuple[RunResult, tuple[ReceivedSpan, ...], tuple[ReceivedLog, ...]]:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("logs", endpoint=receiver.endpoint, set_global=False, logs=logs)
        model = ScriptedModel(_brain)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="w", model=model, tools=[lookup])],
            telemetry=Telemetry(handle.provider),
        )
        result = await team.run("look ann up")
        handle.shutdown()
        return result, receiver.spans(), receiver.logs()


def _step_span(spans: tuple[ReceivedSpan, ...]) -> ReceivedSpan:
    return next(s for s in spans if s.name == "invoke_agent w")


async def test_records_logged_in_a_run_carry_its_trace_and_span(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="regiment"):
        result, spans, _ = await _run(logs=False)
    (record,) = [r for r in caplog.records if r.name == "regiment.worker"]
    assert "lookup failed" in record.getMessage()
    assert getattr(record, "trace_id", None) == result.trace_id
    assert getattr(record, "span_id", None) == _step_span(spans).span_id


def test_records_outside_a_span_have_empty_ids(caplog: pytest.LogCaptureFixture) -> None:
    Telemetry()
    with caplog.at_level(logging.INFO, logger="regiment"):
        logging.getLogger("regiment.test").info("no span here")
    (record,) = caplog.records
    assert (getattr(record, "trace_id", None), getattr(record, "span_id", None)) == ("", "")


async def test_records_are_exported_over_otlp_with_their_trace() -> None:
    result, spans, logs = await _run(logs=True)
    (exported,) = [log for log in logs if "lookup failed" in log.body]
    assert exported.severity == "WARNING"
    assert exported.trace_id == result.trace_id
    assert exported.span_id == _step_span(spans).span_id
    # the OTLP handler is detached on shutdown; the correlating one stays
    handlers = logging.getLogger("regiment").handlers
    assert any(isinstance(h, TraceContextHandler) for h in handlers)
    others = [h for h in handlers if not isinstance(h, TraceContextHandler | logging.NullHandler)]
    assert others == []
