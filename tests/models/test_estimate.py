"""The offline token estimate."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regiment.models import (
    Message,
    ModelRequest,
    ToolCallPart,
    ToolResultPart,
    estimate_tokens,
    text_response,
    tool_call_response,
)
from regiment.tools import ToolDefinition

TOOL = ToolDefinition(
    name="issue_refund",
    description="Refund an order in full.",
    input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
)


def ask(text: str, *, tools: tuple[ToolDefinition, ...] = ()) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), tools=tools)


def test_about_four_characters_per_token() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("abcde") == 2  # rounds up


@given(st.text(), st.text(min_size=1))
def test_grows_with_the_text(text: str, more: str) -> None:
    assert estimate_tokens(text + more) >= estimate_tokens(text)
    assert estimate_tokens(ask(text + more)) >= estimate_tokens(ask(text))
    assert estimate_tokens(ask(text + "x" * 4)) > estimate_tokens(ask(text))


def test_counts_system_prompt_tools_and_schemas() -> None:
    bare = estimate_tokens(ask("refund order 42"))
    with_tool = estimate_tokens(ask("refund order 42", tools=(TOOL,)))
    assert with_tool > bare + 300  # the tool-use preamble plus the tool itself
    bigger_schema = ToolDefinition(
        name=TOOL.name,
        description=TOOL.description,
        input_schema={**TOOL.input_schema, "required": ["order_id"], "additionalProperties": False},
    )
    assert estimate_tokens(ask("refund order 42", tools=(bigger_schema,))) > with_tool
    system = ModelRequest(system="You are a billing clerk." * 10, messages=(Message.user("x"),))
    assert estimate_tokens(system) > estimate_tokens(ask("x")) + 50


def test_counts_tool_calls_and_results() -> None:
    call = ToolCallPart(id="c1", name="issue_refund", arguments={"order_id": "A-42" * 20})
    result = ToolResultPart(call_id="c1", content="refunded " * 50)
    request = ModelRequest(
        messages=(
            Message.user("go"),
            Message(role="assistant", parts=(call,)),
            Message.tool_results((result,)),
        )
    )
    assert estimate_tokens(request) > estimate_tokens(ask("go")) + 100


def test_estimates_a_reply() -> None:
    assert estimate_tokens(text_response("word " * 40)) >= 50


def test_tool_arguments_with_a_lone_surrogate_are_counted_not_a_crash() -> None:
    # A model's JSON may carry "\ud800" as an escape; no UTF-8 encoder accepts it.
    reply = tool_call_response("note", {"text": "a\ud800" * 40})
    assert estimate_tokens(reply) >= estimate_tokens(tool_call_response("note", {"text": ""})) + 20
