"""The suite every provider passes: each test runs against AnthropicModel and OpenAIModel,
each over its own wire format on the HTTP stand-in, on asyncio and trio.

Provider-specific behaviour (request shapes, error bodies, caching, thinking)
is in ``test_anthropic*.py`` and ``test_openai*.py``.
"""

from __future__ import annotations

import json

import anyio
import msgspec
import pytest
from anyio.abc import SocketAttribute

from regiment._json import JsonObject
from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    ModelSettings,
    OpenAIModel,
    StreamingModel,
    TextPartDelta,
    ToolCallPartDelta,
    ToolCallPartStart,
    estimate_tokens,
    stream_response,
)
from regiment.tools import ToolDefinition
from tests.conftest import WIRE_NAMES

from .standin import Collected as Pieces
from .standin import Reply, StandIn
from .wires import WIRES, Wire

pytestmark = pytest.mark.anyio

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


def test_the_wire_fixture_runs_every_wire() -> None:
    assert tuple(sorted(WIRES)) == WIRE_NAMES  # tests/conftest.py names them without importing


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo and Bergen?"),), tools=(WEATHER,))


class Collected(Pieces):
    def joined(self, index: int) -> str:
        return "".join(
            d.text if isinstance(d, TextPartDelta) else d.arguments
            for d in self.deltas
            if isinstance(d, TextPartDelta | ToolCallPartDelta) and d.index == index
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
    async with wire.make(api, True, 0) as model:  # retried otherwise (its text void)
        with pytest.raises(ModelConnectionError, match="broke off") as caught:
            await model.stream(ask(), sink)
    assert "not retried (max_retries=0)" in str(caught.value)
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


@pytest.mark.parametrize("address", ["localhost:11434/v1", "127.0.0.1:8000", "http//localhost/v1"])
def test_a_base_url_that_is_no_web_address_is_a_config_error(wire: Wire, address: str) -> None:
    # The SDKs took it, and every call then failed to connect ("UnsupportedProtocol").
    standin = StandIn(base_url=address, no_reply=wire.no_reply)
    with pytest.raises(ConfigError) as caught:
        wire.make(standin, True, 0)
    assert "is not an http:// or https:// address" in str(caught.value)
    assert "_BASE_URL" in str(caught.value)  # where else it may have come from


@pytest.mark.parametrize("provider", [AnthropicModel, OpenAIModel])
@pytest.mark.parametrize(
    ("options", "said"),
    [
        # AnthropicModel failed every call with AssertionError('unreachable'), OpenAIModel
        # raised the SDK's bare ValueError
        ({"max_retries": -1}, "max_retries must be a whole number >= 0"),
        # every call "did not answer in time after 2 retries"; NaN: a bare ValueError
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": -1.5}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": float("nan")}, "timeout must be a finite number of seconds > 0"),
    ],
)
def test_a_timeout_or_retry_count_no_call_can_use_is_a_config_error(
    provider: type[AnthropicModel | OpenAIModel], options: dict[str, float], said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        provider("m", api_key="k", base_url="http://127.0.0.1:9", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", None),
        (b'{"hello": "world"}', None),
        (b"<html>502</html>", "text/html"),
        # JSON nested past the parser's depth: was a RecursionError out of complete()
        (b'{"id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", None),
    ],
    ids=["not-json", "wrong-shape", "html", "nested-too-deep"],
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


async def test_tools_in_extra_go_next_to_the_requests_own(wire: Wire, api: StandIn) -> None:
    """``extra`` wins over the body, and its ``tools`` replaced the request's: a worker
    given Claude's web search (a server tool) lost its own tools, silently."""
    search: JsonObject = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    settings = ModelSettings(extra={"tools": [search], "top_k": 5})
    api.queue(wire.reply("Snow.", ()))
    async with wire.make(api, True, 0) as model:
        await model.complete(msgspec.structs.replace(ask(), settings=settings))
    (sent,) = api.requests
    tools = sent.body["tools"]
    assert len(tools) == 2
    assert WEATHER.name in json.dumps(tools[0])
    assert tools[1] == search
    assert sent.body["top_k"] == 5


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
    assert first.usage_estimated  # so its chat span says regiment.usage.estimated
    (warning,) = [r for r in caplog.records if r.name == "regiment.models"]
    assert "reported no token usage" in warning.getMessage()


@pytest.mark.parametrize(
    ("status", "text", "permanent"),
    [
        (401, "invalid x-api-key", True),
        (403, "this key may not use this model", True),
        (404, "model: claude-typo", True),
        (400, "top_k: Extra inputs are not permitted", True),
        (422, "temperature: must be at most 2", True),
        (400, "Your credit balance is too low to access the Anthropic API", True),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", False),
        (400, "This model's maximum context length is 128000 tokens", False),
        (400, "Invalid 'messages[2].content': string too long", False),
        (413, "request too large", False),
        (429, "slow down", False),
        (500, "oops", False),
    ],
)
async def test_an_error_no_retry_can_fix_is_permanent(
    wire: Wire, api: StandIn, status: int, text: str, permanent: bool
) -> None:
    # A replan asks the same model with the same key and settings: only a request too
    # long for the model, or a server that may recover, can be helped by one.
    api.queue(wire.error(status, "some_error", text, **{"x-should-retry": "false"}))
    async with wire.make(api, True, 2) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    assert (caught.value.status_code, caught.value.permanent) == (status, permanent)
    assert text in str(caught.value)
    assert len(api.requests) == 1


@pytest.mark.parametrize("status", [429, 529, 500])
@pytest.mark.parametrize(
    ("retries", "said"),
    [(0, "(not retried: max_retries=0)"), (1, "after 1 retry"), (2, "after 2 retries")],
)
async def test_an_error_says_how_often_it_was_retried(
    wire: Wire, api: StandIn, status: int, retries: int, said: str
) -> None:
    api.queue(*[wire.transient(status) for _ in range(retries + 1)])
    async with wire.make(api, True, retries) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    assert said in str(caught.value)
    assert "even after" not in str(caught.value)
    assert len(api.requests) == retries + 1


async def test_an_error_the_server_said_not_to_retry_says_so(wire: Wire, api: StandIn) -> None:
    api.queue(wire.error(429, "rate_limit_error", "slow down", **{"x-should-retry": "false"}))
    async with wire.make(api, True, 2) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    assert "(not retried: the server's x-should-retry header said not to)" in str(caught.value)
    assert len(api.requests) == 1


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("header", ["retry-after", "retry-after-ms"])
async def test_a_wait_longer_than_a_call_waits_is_not_retried_and_says_so(
    wire: Wire, api: StandIn, status: int, header: str
) -> None:
    # A daily limit asks for an hour: the anthropic SDK slept that long before each
    # retry, silently (the openai SDK gave up, saying only "not retried").
    hour = "3600" if header == "retry-after" else "3600000"
    api.queue(wire.error(status, "rate_limit_error", "daily limit", **{header: hour}))
    api.queue(wire.reply("too late", ()))
    async with wire.make(api, True, 2) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(ask())
    assert "not retried: the server asked to wait 3600 s" in str(caught.value)
    assert "try again after that" in str(caught.value)
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    ("retries", "said"), [(0, "(not retried: max_retries=0)"), (1, "after 1 retry")]
)
async def test_a_server_that_cannot_be_reached_says_how_often_it_was_retried(
    wire: Wire, retries: int, said: str
) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now: every connection is refused
    closed = StandIn(base_url=f"http://127.0.0.1:{port}", no_reply=wire.no_reply)
    async with wire.make(closed, True, retries) as model:
        with pytest.raises(ModelConnectionError, match="could not be reached") as caught:
            await model.complete(ask())
    assert said in str(caught.value)


async def test_an_error_that_quotes_the_prompt_does_not_repeat_it(wire: Wire, api: StandIn) -> None:
    """Some servers echo the input in a 400; the error's text reaches logs and events
    whether or not content is captured, so the prompt is left out of it, and a long
    text is cut."""
    secret = "my card is 4111 1111 1111 1111,\nrefund order 7"
    cut = f"input_value={secret[:30]!r}..."  # as pydantic quotes a long input
    echo = f"invalid input {json.dumps(secret)} (as {secret!r}, {cut}); {'detail ' * 200}"
    api.queue(wire.error(400, "invalid_request_error", echo))
    request = ModelRequest(system="You refund orders.", messages=(Message.user(secret),))
    async with wire.make(api, True, 0) as model:
        with pytest.raises(ModelAPIError) as caught:
            await model.complete(request)
    said = str(caught.value)
    assert "4111" not in said.replace(api.base_url, "")  # the server's port may hold 4111
    assert said.count("characters of the request]") == 3  # as JSON, as Python quotes, a part
    assert "more characters)" in said
    assert caught.value.permanent


async def test_a_base_urls_password_is_in_no_message_log_or_repr(
    wire: Wire, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """The model's errors are journaled, logged, printed and served to others: they, its
    warnings, its repr and ``base_url`` named the URL with its password."""
    password = "pw-8c1d5e0a"
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now: every connection is refused
    for where in (api.base_url, f"http://127.0.0.1:{port}"):
        at = where.replace("http://", f"http://ann:{password}@")
        reply = wire.reply("snow", ())
        reply.body = _no_usage(reply.body)  # type: ignore[assignment]
        api.queue(reply)  # warned about: no usage
        async with wire.make(StandIn(base_url=at, no_reply=wire.no_reply), False, 0) as model:
            with caplog.at_level("DEBUG"):
                try:
                    await model.complete(ask())
                except ModelConnectionError as exc:
                    said = str(exc)
                else:
                    said = ""
            shown = f"{model!r} {model.base_url} {said}"
        assert shown.count(f"http://ann@{where.removeprefix('http://')}") == 2 + bool(said)
    assert said  # the closed port's call failed, naming the URL
    # every logger's: ours, the SDK's debug lines, the HTTP client's "HTTP Request: POST <url>"
    logged = [r.getMessage() for r in caplog.records]
    assert any("reported no token usage" in m and "http://ann@" in m for m in logged)
    assert any(m.startswith("HTTP Request: POST http://ann@127.0.0.1:") for m in logged)
    assert [m for m in [*logged, shown] if password in m] == []
    # and the server got the password as before: Basic auth, as the HTTP client sends a URL's
    assert api.requests[0].headers["authorization"] == "Basic YW5uOnB3LThjMWQ1ZTBh"
