"""One ``chat`` span per model call, whoever makes it: regiment, or the Anthropic
SDK when its own tracing is on (then in the team's tracer provider, not the global one).

The model talks HTTP to the local Messages API stand-in; the spans are exported
over real OTLP/HTTP and decoded from protobuf.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import AnthropicModel, Model, OpenAIModel
from regiment.telemetry import SpanCollector, Telemetry, configure_tracing

from ..models.chat_api import completion
from ..models.messages_api import message
from ..models.standin import Reply, StandIn, serve
from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio

NOTHING_TO_DO = json.dumps({"steps": []})


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    no_reply = Reply(500, {"type": "error", "error": {"type": "api_error", "message": "none"}})
    async for server in serve(no_reply):
        yield server


def _built(api: StandIn, sdk_tracing: bool) -> AnthropicModel:
    return AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, sdk_tracing=sdk_tracing, stream=False
    )


def _given(api: StandIn, option: Any) -> AnthropicModel:
    client = anthropic.AsyncAnthropic(api_key="k", base_url=api.base_url, open_telemetry=option)
    return AnthropicModel("claude-test-1", client=client, stream=False)


async def _traced_run(api: StandIn, model: Model) -> tuple[ReceivedSpan, ...]:
    """A run of two model calls (a plan with nothing to do, then the answer)."""
    if not api.replies:  # an Anthropic model unless the test queued otherwise
        api.queue(
            message([{"type": "text", "text": NOTHING_TO_DO}]),
            message([{"type": "text", "text": "all done"}]),
        )
    with OtlpReceiver() as receiver:
        handle = configure_tracing("sdk", endpoint=receiver.endpoint, set_global=False)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="w", model=model)],
            telemetry=Telemetry(handle.provider),
        )
        result = await team.run("say done")
        assert result.answer == "all done"
        handle.shutdown()
        return receiver.spans()


def _chats(spans: tuple[ReceivedSpan, ...]) -> list[ReceivedSpan]:
    return [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]


def _assert_one_chat_per_call(spans: tuple[ReceivedSpan, ...], name: str) -> None:
    chats = _chats(spans)
    assert [s.name for s in chats] == [name, name]
    by_id = {s.span_id: s for s in spans}
    (trace_id,) = {s.trace_id for s in spans}
    for chat in chats:
        assert chat.trace_id == trace_id
        assert chat.parent_span_id is not None
        assert by_id[chat.parent_span_id].name in {"plan planner", "synthesize"}


@pytest.mark.parametrize(
    ("make", "span_name"),
    [
        pytest.param(lambda api: _built(api, False), "chat claude-test-1", id="built"),
        pytest.param(lambda api: _built(api, True), "anthropic.messages.create", id="sdk_tracing"),
        pytest.param(lambda api: _given(api, False), "chat claude-test-1", id="own-client-quiet"),
        pytest.param(lambda api: _given(api, {}), "anthropic.messages.create", id="own-client"),
    ],
)
async def test_one_chat_span_per_call(
    api: StandIn, make: Callable[[StandIn], AnthropicModel], span_name: str
) -> None:
    model = make(api)
    async with model:
        spans = await _traced_run(api, model)
    await model.client.close()  # a given client stays the caller's to close
    _assert_one_chat_per_call(spans, span_name)
    assert len(api.requests) == 2


async def test_a_client_naming_its_own_provider_keeps_it(api: StandIn) -> None:
    collector = SpanCollector()
    own = TracerProvider(shutdown_on_exit=False)
    own.add_span_processor(collector)
    model = _given(api, {"tracer_provider": own})
    async with model:
        spans = await _traced_run(api, model)
    await model.client.close()
    assert _chats(spans) == []  # no second span of regiment's
    names = [s.name for s in collector.spans()]
    assert names == ["anthropic.messages.create", "anthropic.messages.create"]
    own.shutdown()


async def test_openai_calls_get_regiment_s_one_chat_span(api: StandIn) -> None:
    api.queue(
        completion(NOTHING_TO_DO),
        completion("all done"),
    )
    model = OpenAIModel("gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1", stream=False)
    async with model:
        spans = await _traced_run(api, model)
    _assert_one_chat_per_call(spans, "chat gpt-test-1")
