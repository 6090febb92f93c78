"""The provider-neutral message values."""

from __future__ import annotations

import msgspec
import pytest

from regiment.errors import ConfigError
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    text_response,
    tool_call_response,
)
from regiment.tools import ToolDefinition


def test_usage_adds_up_and_totals() -> None:
    a = Usage(input_tokens=10, output_tokens=3, cache_read_tokens=100)
    b = Usage(input_tokens=1, output_tokens=2, cache_write_tokens=7)
    total = Usage(input_tokens=11, output_tokens=5, cache_read_tokens=100, cache_write_tokens=7)
    assert a + b == total
    assert (a + b).total_tokens == 123
    assert sum([a, b], Usage()) == a + b


def test_response_text_and_tool_calls_keep_order() -> None:
    first = ToolCallPart(id="1", name="a", arguments={})
    second = ToolCallPart(id="2", name="b", arguments={"x": [1, 2]})
    response = ModelResponse(
        parts=(TextPart(text="Let me "), first, TextPart(text="check."), second),
        stop_reason="tool_use",
        model="m",
    )
    assert response.text == "Let me check."
    assert response.tool_calls == (first, second)
    assert response.to_message() == Message(role="assistant", parts=response.parts)


def test_convenience_constructors() -> None:
    assert Message.user("hi") == Message(role="user", parts=(TextPart(text="hi"),))
    assert Message.assistant("yo").role == "assistant"
    assert Message.assistant("yo").text == "yo"
    result = ToolResultPart(call_id="c", content="boom", is_error=True)
    assert Message.tool_results((result,)) == Message(role="user", parts=(result,))


def test_helpers_build_what_a_model_would_say() -> None:
    assert text_response("done").text == "done"
    call = tool_call_response("lookup", {"k": 1}, text="Looking.")
    assert call.text == "Looking."
    assert call.stop_reason == "tool_use"
    (part,) = call.tool_calls
    assert (part.name, part.arguments) == ("lookup", {"k": 1})
    again = tool_call_response("lookup", {"k": 1})
    assert again.tool_calls[0].id != part.id  # fresh ids, so repeated calls stay distinct
    assert tool_call_response("x", {}, call_id="fixed").tool_calls[0].id == "fixed"


def test_requests_round_trip_through_json_with_tagged_parts() -> None:
    request = ModelRequest(
        system="s",
        messages=(
            Message.user("q"),
            Message(role="assistant", parts=(ToolCallPart(id="c", name="t", arguments={"a": 1}),)),
            Message.tool_results((ToolResultPart(call_id="c", content="r"),)),
        ),
        tools=(ToolDefinition(name="t", description="d", input_schema={"type": "object"}),),
        tool_choice="auto",
    )
    encoded = msgspec.json.encode(request)
    assert b'"type":"tool_call"' in encoded
    assert b'"type":"tool_result"' in encoded
    assert msgspec.json.decode(encoded, type=ModelRequest) == request


@pytest.mark.parametrize("arguments", ['{"k": 1}', ["k", 1], None])
def test_a_tool_call_response_with_arguments_not_a_dict_is_refused(arguments: object) -> None:
    # tool_call_response("lookup", '{"k": 1}') made a call whose arguments were a str: the
    # reply was built, and only the tool side, later, failed it as invalid arguments.
    with pytest.raises(ConfigError) as caught:  # a TypeError too, as it was
        tool_call_response("lookup", arguments)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)
    kind = type(arguments).__name__
    assert str(caught.value) == (
        f"tool_call_response('lookup', ...): arguments must be a dict of the tool's "
        f"arguments, got a {kind}; for JSON text, give json.loads(text)"
    )
