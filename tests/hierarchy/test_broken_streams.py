"""Claude streams that do not end in an answer. One that breaks, or sends an error
event, after its ``message_start`` reported the call's input tokens: the provider bills
them, so the step's and the run's usage (and so the budget) count them; they counted
nothing of them. One that turns out to be a refusal: its text reached ``stream()``
readers as ``TextDelta`` s like an answer's; now a ``refused`` marker follows it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from regiment.errors import RunError, StepFailed
from regiment.hierarchy import Budget, Planner, RunFailed, StepErrored, Team, TextDelta, Worker
from regiment.models import AnthropicModel, OpenAIModel, ScriptedModel
from regiment.telemetry import Telemetry

from ..models import chat_api, messages_api
from ..models.standin import Reply, StandIn, half_read_body, serve
from .brains import plan_json

# On trio, the SDK's SSE generators that an error event leaves half-read are only closed
# by the garbage collector, and trio warns about that (as in tests/models); the
# connection itself is closed by AnthropicModel.
pytestmark = [
    pytest.mark.anyio,
    half_read_body,
]


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    no_reply = messages_api.error(500, "api_error", "none", **{"x-should-retry": "false"})
    async for server in serve(no_reply):
        yield server


def _broken(how: str) -> Reply:
    """A reply whose stream reports 500 input tokens, writes a little, then breaks."""
    reply = messages_api.message([{"type": "text", "text": "Refunding order 7"}], input_tokens=500)
    assert reply.events is not None
    if how == "cut":
        reply.cut_after = 4  # message_start, ping, a block's start and first piece
    else:
        failure = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        reply.events = [*reply.events[:4], ("error", json.dumps(failure))]
    return reply


_STEP = {"description": "refund order 7", "worker": "billing"}


def _planner(request: object) -> str:
    return plan_json(_STEP)


@pytest.mark.parametrize("how", ["cut", "error_event"])
async def test_a_worker_stream_that_breaks_is_charged(api: StandIn, how: str) -> None:
    api.queue(_broken(how))
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url)
    worker = Worker(name="billing", description="Refunds.", model=model)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner)),
        workers=[worker],
        budget=Budget(replans=0),
    )
    async with model:
        with pytest.raises(StepFailed) as caught:
            await team.run("Refund order 7")
    assert caught.value.failed is not None
    (step,) = caught.value.failed.steps
    assert (step.model_calls, step.usage.input_tokens) == (1, 500)
    assert caught.value.failed.usage.input_tokens >= 500


@pytest.mark.parametrize("how", ["cut", "error_event"])
async def test_a_synthesizer_stream_that_breaks_is_charged(api: StandIn, how: str) -> None:
    api.queue(_broken(how))
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url)
    worker = Worker(name="billing", description="Refunds.", model=ScriptedModel(["refunded"]))
    planner = Planner(model=ScriptedModel(_planner), synthesizer_model=model)
    team = Team(name="refunds", planner=planner, workers=[worker])
    async with model:
        with pytest.raises(RunError) as caught:
            await team.run("Refund order 7")
    assert caught.value.failed is not None
    scripted = sum(s.usage.input_tokens for s in caught.value.failed.steps)
    assert caught.value.failed.usage.input_tokens >= 500 + scripted


@pytest.mark.parametrize("role", ["worker", "synthesizer"])
async def test_a_streamed_refusal_is_marked_after_its_text(api: StandIn, role: str) -> None:
    api.queue(
        messages_api.message([{"type": "text", "text": "I can't help"}], stop_reason="refusal")
    )
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url)
    scripted = ScriptedModel(["refunded"])
    worker = Worker(
        name="billing", description="Refunds.", model=model if role == "worker" else scripted
    )
    planner = Planner(
        model=ScriptedModel(_planner), synthesizer_model=model if role == "synthesizer" else None
    )
    team = Team(name="refunds", planner=planner, workers=[worker], budget=Budget(replans=0))
    async with model, team.start() as running, running.stream("Refund order 7") as events:
        got = [event async for event in events]
    deltas = [e for e in got if isinstance(e, TextDelta) and e.role == role]
    assert "".join(d.text for d in deltas) == "I can't help"
    assert [d.refused for d in deltas][-1] is True
    assert not any(d.refused for d in deltas[:-1])
    (call,) = {d.call for d in deltas}  # the marker names the call whose text it declines
    assert call
    marker = got.index(deltas[-1])
    assert isinstance(got[-1], RunFailed)
    if role == "worker":
        (errored,) = [e for e in got if isinstance(e, StepErrored)]
        assert marker < got.index(errored)
        assert (deltas[-1].worker, deltas[-1].step_id) == ("billing", "s1")


async def test_a_chat_stream_that_breaks_before_its_usage_is_charged_an_estimate(
    api: StandIn,
) -> None:
    """A Chat Completions stream says its usage only in its last chunk: one that breaks
    before it is charged an estimate of its input, marked so on its ``chat`` span."""
    reply = chat_api.completion("Refunding order 7, then telling the customer.")
    reply.cut_after = 4
    api.queue(reply)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = OpenAIModel("gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1", max_retries=0)
    worker = Worker(name="billing", description="Refunds.", model=model)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner)),
        workers=[worker],
        budget=Budget(replans=0),
        telemetry=Telemetry(provider),
    )
    async with model:
        with pytest.raises(StepFailed) as caught:
            await team.run("Refund order 7")
    assert caught.value.failed is not None
    (step,) = caught.value.failed.steps
    assert step.model_calls == 1
    assert step.usage.input_tokens > 0
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat gpt-test-1"]
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == step.usage.input_tokens
    assert attributes["regiment.usage.estimated"] is True


async def test_a_reply_charged_an_estimate_for_a_broken_attempt_says_so_on_its_span(
    api: StandIn,
) -> None:
    """A Chat Completions stream that broke before its usage, then succeeded when made
    again: its reply's usage holds the estimate for the broken attempt, and only the
    WARNING said so; its ``chat`` span now has ``regiment.usage.estimated`` too."""
    cut = chat_api.completion("Refunding order 7, then telling the customer.")
    cut.cut_after = 4
    api.queue(cut, chat_api.completion("Refunded order 7."))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = OpenAIModel("gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1", max_retries=1)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel([plan_json(_STEP), "Done."])),
        workers=[Worker(name="billing", description="Refunds.", model=model)],
        telemetry=Telemetry(provider),
    )
    async with model:
        result = await team.run("Refund order 7")
    (step,) = result.steps
    assert step.output == "Refunded order 7."
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat gpt-test-1"]
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == step.usage.input_tokens
    assert attributes["regiment.usage.estimated"] is True
