"""No user data on spans with content capture off; all of it, in its place, with it on.

Exported over real OTLP/HTTP and decoded from protobuf."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from regiment.errors import RunError
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    OpenAIModel,
    ScriptedModel,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import tool

from ..models.chat_api import error
from ..models.standin import StandIn, serve
from ._pii_team import SynthesisBroke, pii_team
from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio


async def _run(capture: bool) -> tuple[tuple[ReceivedSpan, ...], str]:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("pii", endpoint=receiver.endpoint, set_global=False)
        team, goal, marker = pii_team(Telemetry(handle.provider, capture_content=capture))
        with pytest.raises((RunError, SynthesisBroke)):
            await team.run(goal)
        handle.shutdown()
        return receiver.spans(), marker


def _texts(span: ReceivedSpan) -> Iterator[tuple[str, str]]:
    """Every piece of text a span carries, with where it sits."""
    yield "name", span.name
    yield "status", span.status_message
    for key, value in span.attributes.items():
        yield f"attribute {key}", str(value)
    for name, attributes in span.events:
        yield f"event {name}", name
        for key, value in attributes.items():
            yield f"event {name} {key}", str(value)


def _where(spans: tuple[ReceivedSpan, ...], marker: str) -> set[tuple[str, str]]:
    return {(s.name, where) for s in spans for where, text in _texts(s) if marker in text}


async def test_capture_off_keeps_every_user_text_out_of_the_trace() -> None:
    spans, marker = await _run(capture=False)
    names = {s.name for s in spans}
    # the run did reach every channel the marker travels through
    assert {"execute_tool lookup", "verify", "plan planner", "synthesize"} <= names
    assert any(s.attributes.get("regiment.plan.replan") for s in spans)  # it replanned
    assert _where(spans, marker) == set()
    synth = next(s for s in spans if s.name == "synthesize")
    (event,) = [a for n, a in synth.events if n == "exception"]
    assert str(event["exception.type"]).endswith("SynthesisBroke")
    assert event["regiment.error.code"] == "SynthesisBroke"
    assert event["regiment.error.message_length"] == len(f"could not write the answer for {marker}")
    assert "exception.message" not in event
    assert "exception.stacktrace" not in event
    # the failed model call marks its phase ERROR with the exception's type
    assert synth.status_code == 2
    assert str(synth.attributes["error.type"]).endswith(".SynthesisBroke")
    assert synth.status_message == synth.attributes["error.type"]
    replan = next(s for s in spans if s.attributes.get("regiment.plan.replan"))
    # the reason quotes the explanation inside a sentence of its own
    reason_length = replan.attributes["regiment.replan.reason_length"]
    assert isinstance(reason_length, int)
    assert reason_length >= len(f"the customer {marker} is unknown")
    assert "regiment.replan.reason" not in replan.attributes
    verify = next(s for s in spans if s.name == "verify")
    assert verify.attributes["regiment.check.detail_length"] == len(
        f"the customer {marker} is unknown"
    )


async def test_capture_on_records_each_user_text_where_it_belongs() -> None:
    spans, marker = await _run(capture=True)
    found = _where(spans, marker)
    assert ("plan planner", "attribute gen_ai.input.messages") not in found  # the chat span has it
    expected = {
        ("execute_tool lookup", "attribute gen_ai.tool.call.arguments"),
        ("execute_tool lookup", "attribute gen_ai.tool.call.result"),
        ("verify", "attribute regiment.check.detail"),
        ("plan planner", "attribute regiment.replan.reason"),
        ("synthesize", "event exception exception.message"),
        ("synthesize", "event exception exception.stacktrace"),
        ("synthesize", "status"),
    }
    assert expected <= found, sorted(found)
    chats_with_goal = {
        where for name, where in found if name.startswith("chat ") and "input" in where
    }
    assert chats_with_goal == {"attribute gen_ai.input.messages"}


async def test_a_failed_run_keeps_its_totals_on_the_root_span() -> None:
    spans, _ = await _run(capture=False)
    root = next(s for s in spans if s.name == "invoke_agent pii")
    assert root.parent_span_id is None
    assert root.status_code == 2
    assert root.attributes["regiment.run.status"] == "failed"
    assert str(root.attributes["error.type"]).startswith("regiment.errors.")
    # plan v1, then the replan after the failed check: two versions, a step in each
    assert root.attributes["regiment.plan.versions"] == 2
    assert root.attributes["regiment.run.steps"] == 2
    # each step looks the customer up once
    assert root.attributes["regiment.usage.tool_calls"] == 2
    # plan, s1 (tool call, answer), replan, s2 (tool call, answer), and the synthesis,
    # which failed: a call made counts though it never answered (no tokens)
    assert root.attributes["regiment.usage.model_calls"] == 7
    assert root.attributes["regiment.reports.stale_dropped"] == 0


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(error(500, "server_error", "nothing queued")):
        yield server


@pytest.mark.parametrize("capture", [False, True])
async def test_a_url_password_in_an_error_never_reaches_the_collector(
    api: StandIn, capture: bool
) -> None:
    """A model API at a base_url with a password in it answers 400, quoting the prompt:
    with capture off its error's text stays off the spans; with it on (and logs
    exported) the URL's password is redacted wherever the text goes."""
    password = f"pw-{uuid.uuid4().hex}"
    api.queue(error(400, "invalid_request_error", "your prompt 'refund ann' is bad"))
    host = api.base_url.removeprefix("http://")
    model = OpenAIModel(
        "gpt-x", api_key="k", base_url=f"http://ann:{password}@{host}/v1", max_retries=0
    )
    with OtlpReceiver() as receiver:
        handle = configure_tracing("pii", endpoint=receiver.endpoint, set_global=False, logs=True)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="w", model=model)],
            telemetry=Telemetry(handle.provider, capture_content=capture),
        )
        async with model:
            with pytest.raises(RunError) as raised:
                await team.run("refund ann")
        logging.getLogger("regiment.run").warning("the run failed: %s", raised.value)
        handle.shutdown()
        spans, logs = receiver.spans(), receiver.logs()
    # nor is it in the caller's own error, which is journaled, logged and served: the
    # URL is named without it
    assert password not in str(raised.value)
    assert f"http://ann@{host}/v1" in str(raised.value)
    texts = [text for span in spans for _, text in _texts(span)]
    texts += [log.body for log in logs] + [str(log.attributes) for log in logs]
    assert [text for text in texts if password in text] == []
    on_spans = [text for span in spans for _, text in _texts(span) if f"ann@{host}" in text]
    assert bool(on_spans) is capture  # an exception's message only with capture on
    assert any(f"ann@{host}" in log.body for log in logs)


@pytest.mark.parametrize("capture", [False, True])
async def test_a_made_up_tool_name_is_other_on_spans_and_metrics(capture: bool) -> None:
    """The name of a tool the model made up is text it wrote: it named the call's span
    and its ``gen_ai.tool.name`` and ``regiment.tool.duration`` series with capture off."""
    marker = f"pii-{uuid.uuid4().hex}@example.com"

    @tool
    def lookup(customer: str) -> str:
        """Find a customer."""
        return "found"

    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response(json.dumps({"steps": [{"id": "s1", "description": "mail"}]}))
        if request.role == "worker" and len(request.messages) == 1:
            return tool_call_response(f"email {marker}", {"to": "ann"})
        return text_response("done")

    model = ScriptedModel(brain)
    with OtlpReceiver() as receiver:
        handle = configure_tracing("pii", endpoint=receiver.endpoint, set_global=False)
        telemetry = Telemetry(
            handle.provider, meter_provider=handle.meter_provider, capture_content=capture
        )
        worker = Worker(name="w", description="mails", model=model, tools=[lookup])
        team = Team(name="t", planner=Planner(model=model), workers=[worker], telemetry=telemetry)
        await team.run("mail ann")
        handle.shutdown()
        spans, metrics = receiver.spans(), receiver.metrics()
    (call,) = [s for s in spans if s.name.startswith("execute_tool")]
    assert call.name == "execute_tool _OTHER"
    assert call.attributes["gen_ai.tool.name"] == "_OTHER"
    assert call.attributes["error.type"] == "unknown_tool"
    durations = [m for m in metrics if m.name == "regiment.tool.duration"]
    assert {p.attributes["gen_ai.tool.name"] for m in durations for p in m.points} == {"_OTHER"}
    assert str(metrics).count(marker) == 0
    # with capture on, the model's reply and the tool's error result name it, as captured
    # content does (the call's status, the error the model was told, too); with it off,
    # nothing does
    captured = {
        ("chat scripted", "attribute gen_ai.output.messages"),
        ("chat scripted", "attribute gen_ai.input.messages"),
        ("execute_tool _OTHER", "attribute gen_ai.tool.call.result"),
        ("execute_tool _OTHER", "status"),
    }
    assert _where(spans, marker) == (captured if capture else set())


async def test_a_phrase_the_model_wrote_as_a_step_id_stays_out_of_the_trace() -> None:
    # The step's id was the model's own words (`refund ann.smith@...`), and it went on
    # the step's span as regiment.step.id with capture off. A phrase is only a label now:
    # the step gets a generated id, and a dependency that names the label still finds it.
    phrase = "refund ann.smith@example.com"

    async def brain(request: ModelRequest) -> str:
        if request.role == "planner":
            steps = [
                {"id": phrase, "description": "refund", "worker": "w"},
                {"id": "tell_her", "description": "tell", "worker": "w", "depends_on": [phrase]},
            ]
            return json.dumps({"steps": steps})
        return "done" if request.role == "worker" else "answer"

    model = ScriptedModel(brain)
    with OtlpReceiver() as receiver:
        handle = configure_tracing("ids", endpoint=receiver.endpoint, set_global=False)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="w", model=model)],
            telemetry=Telemetry(handle.provider),
        )
        result = await team.run("refund and tell")
        handle.shutdown()
        spans = receiver.spans()
    assert [(s.id, s.depends_on) for s in result.plans[0].steps] == [
        ("s1", ()),
        ("tell_her", ("s1",)),
    ]
    step_ids = {s.attributes.get("regiment.step.id") for s in spans if s.name == "invoke_agent w"}
    assert step_ids == {"s1", "tell_her"}
    assert _where(spans, "ann.smith") == set()
