"""Claude's paused turns against the Messages API stand-in: a reply that stops with
``pause_turn`` (server tools still at work) was taken as the final reply, its text as
the answer; now it is sent back unchanged as the last assistant turn and the model
goes on, a bounded number of times, each leg's tokens charged to the one call."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import cast

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from regiment.errors import ModelAPIError
from regiment.hierarchy import Planner, Team, TextDelta, Worker
from regiment.hierarchy._live_events import LiveSink
from regiment.models import (
    AnthropicModel,
    Message,
    ModelRequest,
    PartDelta,
    ScriptedModel,
    StreamRestart,
    TextPartDelta,
    Usage,
)
from regiment.telemetry import Telemetry

from ..hierarchy.brains import plan_json
from .messages_api import Block, error, message
from .standin import Collected, Reply, StandIn, half_read_body, serve
from .wires import WIRES

pytestmark = [pytest.mark.anyio, half_read_body]

SEARCH: Block = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "Oslo weather"},
}
FOUND: Block = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://weather.example/oslo",
            "title": "Oslo",
            "encrypted_content": "abc",
            "page_age": None,
        }
    ],
}
THOUGHT: Block = {"type": "thinking", "thinking": "Look it up.", "signature": "sig-1"}
PAUSED: list[Block] = [THOUGHT, {"type": "text", "text": "Searching the web."}, SEARCH, FOUND]


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(error(500, "api_error", "none", **{"x-should-retry": "false"})):
        yield server


def paused() -> Reply:
    return message(PAUSED, stop_reason="pause_turn", input_tokens=100, output_tokens=20)


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo?"),))


@pytest.mark.parametrize("stream", [True, False])
async def test_a_paused_turn_is_continued_with_its_content_sent_back(
    api: StandIn, stream: bool
) -> None:
    api.queue(paused(), message([{"type": "text", "text": "Snow in Oslo."}]))
    async with AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, stream=stream
    ) as model:
        response = await model.complete(ask())
    assert response.stop_reason == "end_turn"
    assert response.text == "Searching the web.Snow in Oslo."
    assert response.usage == Usage(input_tokens=111, output_tokens=27)  # both legs billed
    assert len(api.requests) == 2
    first, second = (r.body["messages"] for r in api.requests)
    # the paused reply goes back as it came, as the last turn: no user message after it
    assert second[: len(first)] == first
    (sent,) = second[len(first) :]
    assert sent["role"] == "assistant"
    assert [block["type"] for block in sent["content"]] == [
        "thinking",
        "text",
        "server_tool_use",
        "web_search_tool_result",
    ]
    thought, text, search, found = sent["content"]
    assert (thought["thinking"], thought["signature"]) == ("Look it up.", "sig-1")
    assert text["text"] == "Searching the web."
    assert (search["id"], search["input"]) == ("srvtoolu_1", {"query": "Oslo weather"})
    assert found["tool_use_id"] == "srvtoolu_1"
    assert found["content"][0]["url"] == "https://weather.example/oslo"
    assert api.requests[1].body["model"] == "claude-test-1"


async def test_a_streamed_continuation_numbers_its_pieces_after_the_paused_ones(
    api: StandIn,
) -> None:
    api.queue(paused(), message([{"type": "text", "text": "Snow."}]))
    pieces = Collected()
    async with AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url) as model:
        response = await model.stream(ask(), pieces)
    texts = [d for d in pieces.deltas if isinstance(d, TextPartDelta)]
    # parts: the paused leg's thinking (0) and text (1), then the continuation's text (2)
    assert "".join(d.text for d in texts if d.index == 1) == "Searching the web."
    assert "".join(d.text for d in texts if d.index == 2) == "Snow."
    assert {d.index for d in texts} == {1, 2}
    assert len(response.parts) == 3


async def test_paused_turns_are_continued_a_bounded_number_of_times(
    api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    api.queue(paused(), paused(), paused(), message([{"type": "text", "text": "never"}]))
    async with AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, max_continuations=2
    ) as model:
        with (
            caplog.at_level(logging.INFO, "regiment.models"),
            pytest.raises(ModelAPIError, match=r"max_continuations=2") as caught,
        ):
            await model.complete(ask())
    assert len(api.requests) == 3
    assert caught.value.error_type == "pause_turn"
    assert not caught.value.permanent
    assert caught.value.usage == Usage(input_tokens=300, output_tokens=60)  # every leg
    said = [r.getMessage() for r in caplog.records if "pause_turn" in r.getMessage()]
    assert len(said) == 2
    # each continuation sends all paused content so far as one assistant turn
    assert len(api.requests[2].body["messages"][-1]["content"]) == 2 * len(PAUSED)


async def test_a_failed_continuation_is_charged_the_legs_before_it(api: StandIn) -> None:
    api.queue(paused(), error(400, "invalid_request_error", "bad continuation"))
    async with AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, max_retries=0
    ) as model:
        with pytest.raises(ModelAPIError, match="bad continuation") as caught:
            await model.complete(ask())
    assert caught.value.usage == Usage(input_tokens=100, output_tokens=20)


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "complete"])
async def test_a_continuation_that_fails_transiently_is_made_again_alone(
    api: StandIn, streamed: bool
) -> None:
    """The whole turn was made again, from its first leg: the paused leg's server tools
    ran (and were billed) twice, and a stream() whose first leg was out failed outright."""
    answer = message([{"type": "text", "text": "Snow in Oslo."}])
    overloaded = WIRES["anthropic"].failing(answer, 2, "overloaded_error")  # after message_start
    api.queue(paused(), overloaded, answer)
    pieces = Collected()
    async with AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, max_retries=1
    ) as model:
        response = await (model.stream(ask(), pieces) if streamed else model.complete(ask()))
    assert response.text == "Searching the web.Snow in Oslo."
    first, failed, again = (r.body["messages"] for r in api.requests)
    assert again == failed  # the continuation again, with the paused content as before
    assert again[-1]["role"] == "assistant"
    assert len(again) == len(first) + 1
    # the paused leg (100 in, 20 out), the failed one (11 in, 1 out), the last (11, 7)
    assert response.usage == Usage(input_tokens=122, output_tokens=28)


async def test_a_continuation_that_breaks_after_its_text_voids_only_its_own_pieces(
    api: StandIn,
) -> None:
    """A ``StreamRestart`` for a continuation names its first part (2), not 0: the paused
    leg's pieces (part 1) stay valid, and a run's reader is told to drop only the
    continuation's text."""
    answer = message([{"type": "text", "text": "Snow in Oslo, and more snow tomorrow."}])
    broken = WIRES["anthropic"].failing(answer, 5, "overloaded_error")  # after some text
    api.queue(paused(), broken, answer)
    pieces = Collected()
    told: list[TextDelta] = []
    live = LiveSink("run-1", lambda event: told.append(cast(TextDelta, event)))
    handler = live.text_handler(ask(), LiveSink.new_call())

    async def both(delta: PartDelta) -> None:
        pieces.deltas.append(delta)
        await handler(delta)

    async with AnthropicModel(
        "claude-test-1", api_key="k", base_url=api.base_url, max_retries=1
    ) as model:
        response = await model.stream(ask(), both)
    assert response.text == "Searching the web.Snow in Oslo, and more snow tomorrow."
    (restart,) = [d for d in pieces.deltas if isinstance(d, StreamRestart)]
    assert restart.index == 2
    (marker,) = [d for d in told if d.void]
    voided = told[: told.index(marker)]
    assert "".join(d.text for d in voided).startswith("Searching the web.Snow")
    assert marker.void == len("".join(d.text for d in voided)) - len("Searching the web.")
    kept = ""
    for delta in told:
        kept = kept[: len(kept) - delta.void] + delta.text
    assert kept == response.text


async def test_a_team_worker_gets_the_whole_turn_not_the_paused_part(api: StandIn) -> None:
    """Through a team: the paused text alone was the step's output."""
    api.queue(paused(), message([{"type": "text", "text": "Snow in Oslo."}]))
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url)
    plan = plan_json({"description": "find Oslo's weather", "worker": "research"})
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    team = Team(
        name="weather",
        planner=Planner(model=ScriptedModel([plan, "Snow."])),
        workers=[Worker(name="research", description="Searches.", model=model)],
        telemetry=Telemetry(provider),
    )
    async with model:
        result = await team.run("Weather in Oslo?")
    (step,) = result.steps
    assert step.output.endswith("Snow in Oslo.")
    assert step.usage.input_tokens == 111
    assert step.model_calls == 1
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat claude-test-1"]
    assert (chat.attributes or {})["gen_ai.usage.input_tokens"] == 111
    (event,) = chat.events
    assert event.name == "regiment.model.pause_turn"
    assert dict(event.attributes or {}) == {
        "regiment.model.continuation": 1,
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.response.id": "msg_0123",
    }
    assert api.requests[1].body["messages"][-1]["role"] == "assistant"
