"""The Chat Completions chunk reader, property-tested: however a server cuts a reply
into chunks, the deltas join to the final parts and the parts are the reply's."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regiment.models import TextPartDelta, ToolCallPart, ToolCallPartDelta, ToolCallPartStart
from regiment.models._openai_wire import ChunkReader


def _cuts(text: str, points: list[int]) -> list[str]:
    edges = sorted({0, len(text), *(p % (len(text) + 1) for p in points)})
    return [text[a:b] for a, b in itertools.pairwise(edges)]


def _line(delta: dict[str, object], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"id": "c", "model": "m", "choices": [choice]})


@given(
    text=st.text(max_size=80),
    text_cuts=st.lists(st.integers(0, 100), max_size=6),
    arguments=st.lists(st.dictionaries(st.text(max_size=5), st.integers()), max_size=3),
    argument_cuts=st.lists(st.integers(0, 100), max_size=4),
)
def test_any_chunking_reads_back_the_reply(
    text: str, text_cuts: list[int], arguments: list[dict[str, int]], argument_cuts: list[int]
) -> None:
    lines = [_line({"role": "assistant", "content": ""})]
    lines += [_line({"content": piece}) for piece in _cuts(text, text_cuts)]
    for index, args in enumerate(arguments):
        opened = {"index": index, "id": f"call_{index}", "function": {"name": "f", "arguments": ""}}
        lines.append(_line({"tool_calls": [opened]}))
        for piece in _cuts(json.dumps(args), argument_cuts):
            lines.append(
                _line({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    lines += [_line({}, "tool_calls" if arguments else "stop"), "", "data: [DONE]"]

    reader = ChunkReader()
    deltas = [delta for line in lines for delta in reader.line(line)]
    response = reader.response()

    first_call = 1 if text else 0
    assert response.text == text
    assert "".join(d.text for d in deltas if isinstance(d, TextPartDelta)) == text
    assert [c.arguments for c in response.tool_calls] == arguments
    starts = [d for d in deltas if isinstance(d, ToolCallPartStart)]
    assert [s.index for s in starts] == [first_call + i for i in range(len(arguments))]
    for start, args in zip(starts, arguments, strict=True):
        joined = "".join(
            d.arguments
            for d in deltas
            if isinstance(d, ToolCallPartDelta) and d.index == start.index
        )
        assert json.loads(joined) == args
    assert reader.done
    assert response.stop_reason == ("tool_calls" if arguments else "stop")


def _opened(call_id: str, name: str, arguments: str, index: int | None) -> dict[str, object]:
    call: dict[str, object] = {"id": call_id, "function": {"name": name, "arguments": arguments}}
    return call if index is None else {**call, "index": index}


@pytest.mark.parametrize("index", [None, 0], ids=["no-index", "all-index-0"])
def test_parallel_calls_from_servers_that_number_them_loosely_stay_apart(
    index: int | None,
) -> None:
    """Some compatible servers leave a tool call's ``index`` out of its pieces, or give
    every call index 0: a piece with a new id starts a new call, one without an id
    continues the call before it."""
    lines = [
        _line({"tool_calls": [_opened("call_a", "weather", '{"city": ', index)]}),
        _line({"tool_calls": [{"function": {"arguments": '"Oslo"}'}}]}),
        _line({"tool_calls": [_opened("call_b", "time", '{"zone": "CET"}', index)]}),
        _line({}, "tool_calls"),
    ]
    reader = ChunkReader()
    starts = [d for line in lines for d in reader.line(line) if isinstance(d, ToolCallPartStart)]
    assert [(d.index, d.id, d.name) for d in starts] == [
        (0, "call_a", "weather"),
        (1, "call_b", "time"),
    ]
    parts = reader.response().parts
    assert parts == (
        ToolCallPart(id="call_a", name="weather", arguments={"city": "Oslo"}),
        ToolCallPart(id="call_b", name="time", arguments={"zone": "CET"}),
    )
