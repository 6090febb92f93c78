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
from tests.fresh_interpreter import run_fresh

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


def test_exported_records_have_their_secrets_redacted() -> None:
    # A tool's error quoting a password and an API key is logged as it is (a
    # local handler is the application's own), but what leaves for the
    # collector is redacted as captured content is.
    key = "sk-ant-api03-" + "k3y" * 8
    with OtlpReceiver() as receiver:
        handle = configure_tracing("logs", endpoint=receiver.endpoint, set_global=False, logs=True)
        logging.getLogger("regiment.worker").warning(
            "w s1: lookup failed: RuntimeError: login refused, password=hunter2x9 key %s", key
        )
        handle.shutdown()
        (exported,) = receiver.logs()
    assert exported.body == (
        "w s1: lookup failed: RuntimeError: login refused, password=[REDACTED] key [REDACTED]"
    )


class _Formatted(logging.Handler):
    """Formats each record as it comes (a missing field raises in the logging call)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(trace_id)s|%(span_id)s|%(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.mark.parametrize("where", ["regiment", "regiment.user"])
def test_a_handler_attached_before_any_telemetry_can_format_the_ids(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    # As in a fresh process: no TraceContextHandler on the regiment logger yet.
    root = logging.getLogger("regiment")
    kept = [h for h in root.handlers if not isinstance(h, TraceContextHandler)]
    monkeypatch.setattr(root, "handlers", kept)
    handler = _Formatted()
    logger = logging.getLogger(where)
    monkeypatch.setattr(logger, "handlers", [*logger.handlers, handler])
    monkeypatch.setattr(logger, "level", logging.INFO)
    child = logging.getLogger(f"{where}.child")

    child.info("outside")
    provider = TracerProvider(shutdown_on_exit=False)
    with provider.get_tracer("t").start_as_current_span("s") as span:
        child.info("inside")
    ids = span.get_span_context()
    assert handler.lines == [
        "||outside",
        f"{ids.trace_id:032x}|{ids.span_id:016x}|inside",
    ]


def test_records_of_other_loggers_are_left_alone_and_the_previous_factory_kept() -> None:
    from regiment._log_records import TraceContextRecords

    made: list[str] = []

    def previous(*args: object, **kwargs: object) -> logging.LogRecord:
        record = logging.LogRecord(*args, **kwargs)  # type: ignore[arg-type]
        made.append(record.name)
        return record

    factory = TraceContextRecords(previous)
    ours = factory("regiment.x", logging.INFO, __file__, 1, "m", (), None)
    theirs = factory("regimental", logging.INFO, __file__, 1, "m", (), None)
    assert made == ["regiment.x", "regimental"]
    assert (ours.__dict__["trace_id"], ours.__dict__["span_id"]) == ("", "")
    assert "trace_id" not in theirs.__dict__
    # Installed once, on import, and still in the chain when a library installed its
    # own factory on top (Ray does): a record of ours made now is tagged.
    made_now = logging.getLogRecordFactory()("regiment.y", logging.INFO, __file__, 1, "m", (), None)
    assert "trace_id" in made_now.__dict__


def test_import_regiment_alone_tags_records_of_its_loggers() -> None:
    # A fresh interpreter: a handler on `regiment`, then `import regiment`, no telemetry.
    code = (
        "import logging, sys\n"
        "h = logging.StreamHandler(sys.stdout)\n"
        "h.setFormatter(logging.Formatter('%(name)s [%(trace_id)s|%(span_id)s] %(message)s'))\n"
        "logging.getLogger('regiment').addHandler(h)\n"
        "import regiment\n"
        "assert 'opentelemetry' not in sys.modules  # the API loads with the first record\n"
        "logging.getLogger('regiment.tools').warning('hello')\n"
    )
    assert run_fresh(code) == "regiment.tools [|] hello\n"
