"""Streaming at the model level: ScriptedModel's deltas, and stream_response over any Model."""

from __future__ import annotations

import json

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from regiment.errors import ConfigError
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    PartDelta,
    ScriptedModel,
    StreamingModel,
    TextPartDelta,
    ToolCallPartDelta,
    ToolCallPartStart,
    stream_response,
    text_response,
    tool_call_response,
)

from .standin import Collected as Pieces

pytestmark = pytest.mark.anyio


def ask(text: str = "go", **fields: object) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), **fields)  # type: ignore[arg-type]


class Collected(Pieces):
    def text(self, index: int = 0) -> str:
        return "".join(
            d.text for d in self.deltas if isinstance(d, TextPartDelta) and d.index == index
        )


async def test_scripted_text_streams_a_word_at_a_time() -> None:
    model = ScriptedModel(["  It is snowing in Oslo (-3 C).\n"], delta_size=1)
    sink = Collected()
    response = await model.stream(ask(), sink)
    assert [d.text for d in sink.deltas if isinstance(d, TextPartDelta)] == [
        "  ",
        "It ",
        "is ",
        "snowing ",
        "in ",
        "Oslo ",
        "(-3 ",
        "C).\n",
    ]
    assert sink.text() == response.text
    assert response.usage.output_tokens > 0  # estimated, as for complete


async def test_scripted_tool_calls_stream_as_a_start_and_the_arguments() -> None:
    reply = tool_call_response("lookup", {"key": "a", "n": 2}, call_id="c1", text="Looking.")
    model = ScriptedModel([reply])
    sink = Collected()
    response = await model.stream(ask(), sink)
    assert sink.deltas[-2:] == [
        ToolCallPartStart(index=1, id="c1", name="lookup"),
        ToolCallPartDelta(index=1, arguments='{"key":"a","n":2}'),
    ]
    assert sink.text(0) == "Looking."
    assert response.tool_calls == reply.tool_calls


async def test_scripted_text_pieces_are_at_least_delta_size_long() -> None:
    text = "one two three four five six seven eight nine ten eleven twelve"
    sink = Collected()
    await ScriptedModel([text], delta_size=12).stream(ask(), sink)
    pieces = [d.text for d in sink.deltas if isinstance(d, TextPartDelta)]
    assert pieces == [
        "one two three ",
        "four five six ",
        "seven eight ",
        "nine ten eleven ",
        "twelve",
    ]


@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
    st.integers(min_value=1, max_value=50),
)
def test_scripted_deltas_always_join_to_the_text(text: str, delta_size: int) -> None:
    async def run() -> tuple[str, list[str]]:
        sink = Collected()
        model = ScriptedModel([text_response(text)], delta_size=delta_size)
        response = await model.stream(ask(), sink)
        return response.text, [d.text for d in sink.deltas if isinstance(d, TextPartDelta)]

    final, pieces = anyio.run(run)
    assert "".join(pieces) == final == text
    assert all(len(piece) >= delta_size for piece in pieces[:-1])
    assert all(piece for piece in pieces)


def test_delta_size_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="delta_size must be at least 1"):
        ScriptedModel(["x"], delta_size=0)


class CompleteOnly:
    """A Model written before streaming existed: it has only complete()."""

    name = "old"
    provider = "custom"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return tool_call_response("lookup", {"q": 1}, call_id="c9", text="Old style.")


async def test_stream_response_hands_a_complete_only_model_out_whole() -> None:
    sink = Collected()
    response = await stream_response(CompleteOnly(), ask(), sink)
    assert not isinstance(CompleteOnly(), StreamingModel)
    assert sink.deltas == [
        TextPartDelta(index=0, text="Old style."),
        ToolCallPartStart(index=1, id="c9", name="lookup"),
        ToolCallPartDelta(index=1, arguments=json.dumps({"q": 1}, separators=(",", ":"))),
    ]
    assert response.text == "Old style."


async def test_stream_response_streams_a_streaming_model() -> None:
    model = ScriptedModel(["one two three"], delta_size=1)
    assert isinstance(model, StreamingModel)
    sink = Collected()
    await stream_response(model, ask(), sink)
    assert len(sink.deltas) == 3


async def test_a_failing_handler_stops_the_stream_with_its_own_error() -> None:
    class Full(Exception):
        pass

    async def refuse(delta: PartDelta) -> None:
        raise Full

    with pytest.raises(Full):
        await ScriptedModel(["a b c"]).stream(ask(), refuse)


async def test_a_script_dispatches_on_the_role() -> None:
    def brain(request: ModelRequest) -> str:
        match request.role:
            case "planner":
                return '{"steps": []}'
            case "worker":
                return f"{request.worker} did {request.step_id}"
            case _:
                return f"role {request.role}"

    model = ScriptedModel(brain)
    assert (await model.complete(ask(role="planner"))).text == '{"steps": []}'
    worker = ask(role="worker", worker="billing", step_id="s2")
    assert (await model.complete(worker)).text == "billing did s2"
    assert (await model.complete(ask())).text == "role None"  # made outside a team
