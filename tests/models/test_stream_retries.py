"""A stream that fails after it began (an overload or server error event, a broken
connection) is made again when none of its pieces were handed out yet, with the
SDKs' back-off and up to their ``max_retries``; what each failed attempt spent is
charged. Runs over both providers' wires on the HTTP stand-in, on asyncio and trio."""

from __future__ import annotations

import logging

import pytest

from regiment.errors import ModelAPIError, ModelConnectionError
from regiment.models import (
    Message,
    ModelRequest,
    ModelSettings,
    StreamRestart,
    TextPartDelta,
    Usage,
    estimate_tokens,
)

from .chat_api import completion
from .standin import Collected, StandIn, half_read_body
from .wires import Wire

pytestmark = [pytest.mark.anyio, half_read_body]


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo?"),))


async def test_an_overload_before_any_piece_is_retried_and_charged(
    wire: Wire, api: StandIn
) -> None:
    answer = wire.reply("Snow in Oslo.", ())
    api.queue(wire.failing(answer, wire.head, "overloaded_error"), answer)
    sink = Collected()
    async with wire.make(api, True, 2) as model:
        response = await model.stream(ask(), sink)
    assert response.text == "Snow in Oslo."
    assert len(api.requests) == 2
    assert "".join(getattr(d, "text", "") for d in sink.deltas) == "Snow in Oslo."
    # the failed attempt's tokens are billed with the reply's (11 in, 7 out)
    assert response.usage == Usage(input_tokens=11, output_tokens=7) + wire.failed_usage(ask())


async def test_complete_retries_a_stream_that_failed_after_text(wire: Wire, api: StandIn) -> None:
    """``complete`` hands nothing out before the reply is whole, so any transient
    failure of its stream may be retried."""
    answer = wire.reply("Snow in Oslo, and more snow tomorrow.", ())
    api.queue(wire.failing(answer, wire.head + 3, "overloaded_error"), answer)
    async with wire.make(api, True, 2) as model:
        response = await model.complete(ask())
    assert response.text == "Snow in Oslo, and more snow tomorrow."
    assert len(api.requests) == 2


async def test_a_broken_connection_before_any_piece_is_retried(wire: Wire, api: StandIn) -> None:
    answer = wire.reply("Snow.", ())
    cut = wire.reply("Snow.", ())
    cut.cut_after = wire.head
    api.queue(cut, answer)
    async with wire.make(api, True, 2) as model:
        response = await model.stream(ask(), Collected())
    assert response.text == "Snow."
    assert len(api.requests) == 2


async def test_retries_stop_at_max_retries_and_say_so(wire: Wire, api: StandIn) -> None:
    answer = wire.reply("never", ())
    failing = wire.failing(answer, wire.head, "overloaded_error")
    api.queue(failing, failing, answer)
    async with wire.make(api, True, 1) as model:
        with pytest.raises(ModelAPIError, match="made 2 times") as caught:
            await model.stream(ask(), Collected())
    assert len(api.requests) == 2
    assert caught.value.error_type == "overloaded_error"
    assert caught.value.usage == wire.failed_usage(ask()) + wire.failed_usage(ask())


async def test_an_error_that_would_come_again_is_not_retried(wire: Wire, api: StandIn) -> None:
    answer = wire.reply("never", ())
    api.queue(wire.failing(answer, wire.head, "invalid_request_error"), answer)
    async with wire.make(api, True, 2) as model:
        with pytest.raises(ModelAPIError, match="not retried") as caught:
            await model.complete(ask())
    assert len(api.requests) == 1
    assert caught.value.usage == wire.failed_usage(ask())


async def test_a_failure_after_pieces_were_handed_out_is_retried_and_they_are_void(
    wire: Wire, api: StandIn
) -> None:
    """It was not retried ("already handed out"): the step failed on a blip. Now a
    ``StreamRestart`` tells the handler its pieces so far are void, and the call is made
    again; its pieces after the marker are the whole reply."""
    answer = wire.reply("Snow in Oslo, and more snow tomorrow.", ())
    api.queue(wire.failing(answer, wire.head + 3, "overloaded_error"), answer)
    sink = Collected()
    async with wire.make(api, True, 2) as model:
        response = await model.stream(ask(), sink)
    assert response.text == "Snow in Oslo, and more snow tomorrow."
    assert len(api.requests) == 2
    (restart,) = [d for d in sink.deltas if isinstance(d, StreamRestart)]
    before = sink.deltas[: sink.deltas.index(restart)]
    after = sink.deltas[sink.deltas.index(restart) + 1 :]
    assert before
    assert all(isinstance(d, TextPartDelta) for d in before)
    assert restart.index == 0
    assert "overloaded" in restart.error.lower()
    assert "".join(d.text for d in after if isinstance(d, TextPartDelta)) == response.text
    assert response.usage == Usage(input_tokens=11, output_tokens=7) + wire.failed_usage(ask())


async def test_a_stream_that_keeps_failing_after_pieces_says_how_often_it_was_made(
    wire: Wire, api: StandIn
) -> None:
    answer = wire.reply("Snow in Oslo, and more snow tomorrow.", ())
    failing = wire.failing(answer, wire.head + 3, "overloaded_error")
    api.queue(failing, failing)
    sink = Collected()
    async with wire.make(api, True, 1) as model:
        with pytest.raises(ModelAPIError, match="made 2 times"):
            await model.stream(ask(), sink)
    assert len(api.requests) == 2
    assert len([d for d in sink.deltas if isinstance(d, StreamRestart)]) == 1


async def test_a_stream_that_stalls_is_timed_out_and_says_it_stalled(
    wire: Wire, api: StandIn
) -> None:
    """A server that stops sending mid-body: the call ends at the read timeout (each
    attempt), and the error says the server stalled and which timeout to raise; it said
    the stream "broke off (ReadTimeout(''))" and to check the network."""
    stalled = wire.reply("Snow in Oslo.", ())
    stalled.stall_after = wire.head
    api.queue(stalled, stalled)
    slow = ModelRequest(messages=ask().messages, settings=ModelSettings(timeout=0.2))
    async with wire.make(api, True, 1) as model:
        with pytest.raises(ModelConnectionError, match=r"stalled: .* for 0.2 s") as caught:
            await model.complete(slow)
    assert "ModelSettings.timeout" in str(caught.value)
    assert "made 2 times" in str(caught.value)
    assert len(api.requests) == 2


@pytest.mark.parametrize("wire", ["openai"], indirect=True)
async def test_a_chat_stream_broken_before_its_usage_is_charged_an_estimate(
    wire: Wire, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """Chat Completions reports usage only in its last chunk: a stream that broke
    before it is charged an estimate of its input, with a warning."""
    reply = completion("Snow in Oslo, and more snow tomorrow.")
    reply.cut_after = 4
    api.queue(reply)
    caplog.set_level(logging.WARNING, logger="regiment")
    async with wire.make(api, True, 0) as model:
        with pytest.raises(ModelConnectionError, match="broke off") as caught:
            await model.stream(ask(), Collected())
    assert caught.value.usage == Usage(input_tokens=estimate_tokens(ask()))
    assert caught.value.usage_estimated
    assert any("usage is unknown" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("wire", ["openai"], indirect=True)
async def test_a_retried_reply_without_usage_still_gets_its_estimate(
    wire: Wire, api: StandIn
) -> None:
    """A server that reports no usage: the reply that came is estimated as ever, and
    the failed attempt's estimate is added to it."""
    answer = completion("Snow in Oslo.")
    answer.events = [e for e in answer.events or [] if '"usage"' not in e[1]]
    api.queue(wire.failing(answer, wire.head, "server_error"), answer)
    async with wire.make(api, True, 2) as model:
        response = await model.complete(ask())
    first = wire.failed_usage(ask())
    assert response.usage.output_tokens > 0  # the estimate of the reply itself
    assert response.usage.input_tokens == 2 * first.input_tokens


async def test_an_error_event_that_quotes_the_prompt_does_not_repeat_it(
    wire: Wire, api: StandIn
) -> None:
    secret = "refund the order of card 4111 1111 1111 1111"
    said = f"content {secret!r} is not allowed"
    api.queue(wire.failing(wire.reply("never", ()), wire.head, "invalid_request_error", said))
    async with wire.make(api, True, 2) as model:
        with pytest.raises(ModelAPIError, match="is not allowed") as caught:
            await model.complete(ModelRequest(messages=(Message.user(secret),)))
    assert "4111" not in str(caught.value).replace(api.base_url, "")  # the port may hold 4111
    assert f"'[{len(secret)} characters of the request]'" in str(caught.value)
