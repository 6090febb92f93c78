"""The suite every provider passes: each test runs against AnthropicModel and OpenAIModel,
each over its own wire format on the HTTP stand-in, on asyncio and trio.

Provider-specific behaviour (request shapes, error bodies, caching, thinking)
is in ``test_anthropic*.py`` and ``test_openai*.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio
import pytest

from regiment.errors import ModelAPIError, ModelConnectionError
from regiment.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    OpenAIModel,
    PartDelta,
    StreamingModel,
    TextPartDelta,
    ToolCallPartDelta,
    ToolCallPartStart,
    estimate_tokens,
    stream_response,
)
from regiment.tools import ToolDefinition

from . import chat_api, messages_api
from .standin import Reply, StandIn, serve

pytestmark = pytest.mark.anyio

Call = tuple[str, str, str]  # (id, name, JSON arguments)
WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


@dataclass(frozen=True)
class Wire:
    """One provider: how to build its model and its replies."""

    make: Callable[[StandIn, bool, int], AnthropicModel | OpenAIModel]  # (api, stream, retries)
    reply: Callable[[str, tuple[Call, ...]], Reply]
    transient: Callable[[int], Reply]
    no_reply: Reply
    request_id_header: str


def _anthropic_reply(text: str, calls: tuple[Call, ...]) -> Reply:
    blocks: list[messages_api.Block] = [{"type": "text", "text": text}]
    blocks += [
        {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)} for i, n, a in calls
    ]
    return messages_api.message(blocks, stop_reason="tool_use" if calls else "end_turn")


def _openai_reply(text: str, calls: tuple[Call, ...]) -> Reply:
    return chat_api.completion(text, *calls, finish="tool_calls" if calls else "stop")


WIRES = {
    "anthropic": Wire(
        make=lambda api, stream, retries: AnthropicModel(
            "claude-test-1", api_key="k", base_url=api.base_url, stream=stream, max_retries=retries
        ),
        reply=_anthropic_reply,
        transient=lambda status: messages_api.error(
            status, "api_error", "later", **{"retry-after-ms": "1"}
        ),
        no_reply=messages_api.error(
            500, "api_error", "nothing queued", **{"x-should-retry": "false"}
        ),
        request_id_header="request-id",
    ),
    "openai": Wire(
        make=lambda api, stream, retries: OpenAIModel(
            "gpt-test-1",
            api_key="k",
            base_url=f"{api.base_url}/v1",
            stream=stream,
            max_retries=retries,
        ),
        reply=_openai_reply,
        transient=lambda status: chat_api.error(
            status, "server_error", "later", **{"retry-after-ms": "1"}
        ),
        no_reply=chat_api.error(
            500, "server_error", "nothing queued", **{"x-should-retry": "false"}
        ),
        request_id_header="x-request-id",
    ),
}


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture
async def api(wire: Wire) -> AsyncIterator[StandIn]:
    async for server in serve(wire.no_reply):
        yield server


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo and Bergen?"),), tools=(WEATHER,))


class Collected:
    def __init__(self) -> None:
        self.deltas: list[PartDelta] = []

    async def __call__(self, delta: PartDelta) -> None:
        self.deltas.append(delta)

    def joined(self, index: int) -> str:
        return "".join(
            d.text if isinstance(d, TextPartDelta) else d.arguments
            for d in self.deltas
            if not isinstance(d, ToolCallPartStart) and d.index == index
        )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_deltas_add_up_to_the_final_response(wire: Wire, api: StandIn, stream: bool) -> None:
    text = "Let me look up both cities for you right away."
    calls = (("c1", "get_weather", '{"city": "Oslo"}'), ("c2", "get_weather", '{"city": "Bergen"}'))
    api.queue(wire.reply(text, calls))
    sink = Collected()
    async with wire.make(api, stream, 2) as model:
        response = await stream_response(model, ask(), sink)
    assert (api.requests[0].body.get("stream") is True) == stream
    assert sink.joined(0) == response.text == text
    starts = [d for d in sink.deltas if isinstance(d, ToolCallPartStart)]
    assert starts == [
        ToolCallPartStart(index=1, id="c1", name="get_weather"),
        ToolCallPartStart(index=2, id="c2", name="get_weather"),
    ]
    assert [json.loads(sink.joined(i)) for i in (1, 2)] == [{"city": "Oslo"}, {"city": "Bergen"}]
    assert [c.arguments for c in response.tool_calls] == [{"city": "Oslo"}, {"city": "Bergen"}]
    text_deltas = [d for d in sink.deltas if isinstance(d, TextPartDelta)]
    assert len(text_deltas) > 5 if stream else len(text_deltas) == 1
    arguments = [d for d in sink.deltas if isinstance(d, ToolCallPartDelta)]
    assert len(arguments) == (4 if stream else 2)  # each call's JSON in two halves, or whole


async def test_a_stream_that_breaks_off_is_a_connection_error_and_not_retried(
    wire: Wire, api: StandIn
) -> None:
    reply = wire.reply("This reply will never finish, sadly.", ())
    reply.cut_after = 5
    api.queue(reply)
    sink = Collected()
    async with wire.make(api, True, 2) as model:
        with pytest.raises(ModelConnectionError, match="broke off") as caught:
            await model.stream(ask(), sink)
    assert "not retried" in str(caught.value)
    assert sink.joined(0)  # what came before the break was handed out
    assert "This reply will never finish, sadly.".startswith(sink.joined(0))
    assert len(api.requests) == 1


@pytest.mark.parametrize("status", [429, 529, 500])
async def test_transient_errors_before_a_stream_are_retried_by_the_sdk(
    wire: Wire, api: StandIn, status: int
) -> None:
    api.queue(wire.transient(status), wire.reply("made it", ()))
    sink = Collected()
    async with wire.make(api, True, 2) as model:
        response = await model.stream(ask(), sink)
    assert response.text == sink.joined(0) == "made it"
    assert len(api.requests) == 2
    assert api.requests[0].body == api.requests[1].body


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_cancellation_is_not_translated(wire: Wire, api: StandIn, stream: bool) -> None:
    api.queue(Reply(200, {}, hold=True))
    finished = False
    async with wire.make(api, stream, 2) as model:

        async def call() -> None:
            nonlocal finished
            await model.complete(ask())
            finished = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await api.received.wait()
            tg.cancel_scope.cancel()
    assert not finished


def test_every_provider_is_a_streaming_model(wire: Wire) -> None:
    standin = StandIn(base_url="http://127.0.0.1:9", no_reply=wire.no_reply)
    assert isinstance(wire.make(standin, True, 0), StreamingModel)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"{not json", None), (b'{"hello": "world"}', None), (b"<html>502</html>", "text/html")],
    ids=["not-json", "wrong-shape", "html"],
)
async def test_a_reply_that_cannot_be_read_is_a_model_api_error(
    wire: Wire, api: StandIn, stream: bool, body: bytes, content_type: str | None
) -> None:
    # Plain calls get the body as JSON; a streamed call answered with JSON or HTML
    # instead of an event stream is the same mistake (a wrong base_url, say).
    kind = content_type or "application/json"
    headers = {wire.request_id_header: "req_bad"}
    api.queue(Reply(200, {}, headers, raw=body, content_type=kind))
    async with wire.make(api, stream, 2) as model:
        with pytest.raises(ModelAPIError, match="check base_url") as caught:
            await model.complete(ask())
    if stream or body.startswith(b'{"hello'):  # a body that is not JSON has none
        assert caught.value.request_id == "req_bad"
    assert len(api.requests) == 1  # the server's answer, not retried


def _no_usage(value: object, counts: bool = False) -> object:
    """``value`` (a reply body or event) with every token count in its usage at 0."""
    if isinstance(value, dict):
        return {key: _no_usage(item, counts or key == "usage") for key, item in value.items()}
    return 0 if counts and isinstance(value, int) else value


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_a_server_that_reports_no_usage_gets_an_estimate_so_budgets_hold(
    wire: Wire, api: StandIn, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # Some compatible servers send no usage in a stream (no stream_options support), or none.
    for _ in range(2):
        reply = wire.reply("It is snowing in Oslo, and it will go on snowing all week.", ())
        reply.body = _no_usage(reply.body)  # type: ignore[assignment]
        events = reply.events or []
        reply.events = [
            (name, json.dumps(_no_usage(json.loads(data))) if data != "[DONE]" else data)
            for name, data in events
        ]
        api.queue(reply)
    async with wire.make(api, stream, 0) as model:
        with caplog.at_level("WARNING", logger="regiment.models"):
            first = await model.complete(ask())
            await model.complete(ask())
    assert first.usage.input_tokens > 0
    assert first.usage.output_tokens == estimate_tokens(first) > 0
    (warning,) = [r for r in caplog.records if r.name == "regiment.models"]
    assert "reported no token usage" in warning.getMessage()
