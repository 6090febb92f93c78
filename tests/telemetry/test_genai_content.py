"""Captured content follows the GenAI JSON schemas, and stays valid JSON when cut.

The schemas in ``genai_schemas/`` are transcribed from the GenAI semantic
conventions. A part of a known type must match that type's own definition (the
published schemas also accept any object with a ``type`` as a generic part, which
alone would let a wrongly shaped ``text`` part through).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from regiment.errors import RunError
from regiment.telemetry import Telemetry, configure_tracing, genai
from regiment.telemetry._content import _redacted, fit_json

from ._pii_team import SynthesisBroke, pii_team
from .otlp_receiver import OtlpReceiver, ReceivedSpan

SCHEMAS = Path(__file__).parent / "genai_schemas"
KNOWN_PARTS = {
    "text": "TextPart",
    "tool_call": "ToolCallRequestPart",
    "tool_call_response": "ToolCallResponsePart",
    "reasoning": "ReasoningPart",
}
ATTRIBUTE_SCHEMAS = {
    "gen_ai.input.messages": "gen-ai-input-messages.json",
    "gen_ai.output.messages": "gen-ai-output-messages.json",
    "gen_ai.system_instructions": "gen-ai-system-instructions.json",
}


@cache
def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    Draft202012Validator.check_schema(loaded)
    return loaded


def _parts(value: Any, attribute: str) -> list[Any]:
    if attribute == "gen_ai.system_instructions":
        return list(value)
    return [part for message in value for part in message["parts"]]


def validate(attribute: str, text: str) -> Any:
    """Parse ``text`` and check it against the attribute's schema, strictly per part."""
    value = json.loads(text)
    schema = _schema(ATTRIBUTE_SCHEMAS[attribute])
    Draft202012Validator(schema).validate(value)
    for part in _parts(value, attribute):
        definition = KNOWN_PARTS.get(part["type"])
        assert definition is not None, f"{attribute} has a part of unexpected type {part}"
        strict = {"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
        Draft202012Validator(strict).validate(part)
    return value


async def _captured_run(limit: int) -> tuple[ReceivedSpan, ...]:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("genai", endpoint=receiver.endpoint, set_global=False)
        telemetry = Telemetry(handle.provider, capture_content=True, content_limit=limit)
        team, goal, _ = pii_team(telemetry)
        with pytest.raises((RunError, SynthesisBroke)):
            await team.run(goal)
        handle.shutdown()
        return receiver.spans()


@pytest.mark.anyio
async def test_captured_messages_follow_the_genai_schemas() -> None:
    spans = await _captured_run(limit=100_000)
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    seen: dict[str, list[Any]] = {key: [] for key in ATTRIBUTE_SCHEMAS}
    for span in chats:
        for attribute in ATTRIBUTE_SCHEMAS:
            if attribute in span.attributes:
                seen[attribute].append(validate(attribute, str(span.attributes[attribute])))
    assert all(seen.values()), {key: len(values) for key, values in seen.items()}
    inputs = [m for value in seen["gen_ai.input.messages"] for m in value]
    outputs = [m for value in seen["gen_ai.output.messages"] for m in value]
    # the worker's tool loop: the call in an output, its answer as a `tool` message
    call = next(p for m in outputs for p in m["parts"] if p["type"] == "tool_call")
    assert call["name"] == "lookup"
    assert set(call["arguments"]) == {"customer"}
    tool_message = next(m for m in inputs if m["role"] == "tool")
    (response,) = tool_message["parts"]
    assert response == {
        "type": "tool_call_response",
        "id": call["id"],
        "response": response["response"],
    }
    assert response["response"].startswith("record of")
    assert {m["finish_reason"] for m in outputs} == {"stop", "tool_call"}
    assert {m["role"] for m in outputs} == {"assistant"}
    (system,) = seen["gen_ai.system_instructions"][0]
    assert system["type"] == "text"
    assert system["content"].startswith("You are")


@pytest.mark.anyio
async def test_cut_content_is_valid_json_within_the_limit() -> None:
    limit = 300
    spans = await _captured_run(limit=limit)
    cut = 0
    for span in spans:
        for attribute in ATTRIBUTE_SCHEMAS:
            text = span.attributes.get(attribute)
            if text is None:
                continue
            assert len(str(text)) <= limit
            value = validate(attribute, str(text))
            cut += "...[truncated]" in json.dumps(value)
        for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
            if key in span.attributes:
                assert len(str(span.attributes[key])) <= limit
    assert cut > 0  # the limit did bite


_text = st.text(max_size=400)
_json_leaf = st.none() | st.booleans() | st.integers() | _text
_arguments = st.dictionaries(st.text(max_size=10), _json_leaf, max_size=4)
_part = st.one_of(
    st.builds(genai.text_part, _text),
    st.builds(genai.reasoning_part, _text),
    st.builds(
        genai.tool_call_part, st.text(max_size=12), st.text(min_size=1, max_size=12), _arguments
    ),
    st.builds(genai.tool_call_response_part, st.text(max_size=12), _text),
)
_message = st.builds(
    genai.chat_message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(_part, max_size=4),
)


def _structure(value: Any) -> Any:
    """Everything but the content: what cutting must never change."""
    return [
        (m["role"], [(p["type"], p.get("id"), p.get("name")) for p in m["parts"]]) for m in value
    ]


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(_message, max_size=5), limit=st.integers(min_value=1, max_value=2000))
def test_fit_json_cuts_parts_not_json(messages: list[Any], limit: int) -> None:
    text = fit_json(messages, limit, messages=True)
    if text is None:
        assert limit < len("[]")
        return
    assert len(text) <= limit
    value = validate("gen_ai.input.messages", text)
    # only the oldest messages may be dropped, and the kept ones keep their shape
    assert _structure(value) == _structure(messages[len(messages) - len(value) :])
    # secrets are redacted first (a generated argument may be named "TOKEN")
    redacted = _redacted(messages)
    if len(msgspec.json.encode(redacted).decode()) <= limit:
        assert value == redacted


def test_fit_json_keeps_content_that_fits_untouched() -> None:
    messages = [genai.chat_message("user", [genai.text_part("hello"), genai.text_part("x" * 50)])]
    whole = fit_json(messages, 1000, messages=True)
    assert whole is not None
    assert json.loads(whole) == messages
    cut = fit_json(messages, len(whole) - 10, messages=True)
    assert cut is not None
    parts = json.loads(cut)[0]["parts"]
    assert parts[0] == {"type": "text", "content": "hello"}  # the short part is whole
    assert parts[1]["content"].endswith("...[truncated]")


def test_fit_json_redacts_each_string_and_secret_keyed_values() -> None:
    key = "sk-ant-api03-" + "Q" * 30
    value = {"api_key": "plain-looking-value", "note": f'say "{key}" please'}
    text = fit_json(value, 1000)
    assert text is not None
    decoded = json.loads(text)
    assert decoded["api_key"] == "[REDACTED]"
    assert key not in text
    assert decoded["note"] == 'say "[REDACTED]" please'


@pytest.mark.parametrize(
    ("stop", "reason"),
    [
        ("end_turn", "stop"),
        ("tool_use", "tool_call"),
        ("max_tokens", "length"),
        ("tool_calls", "tool_call"),
        ("refusal", "content_filter"),
        ("odd", "odd"),
    ],
)
def test_finish_reasons_map_to_the_schema_values(stop: str, reason: str) -> None:
    assert genai.finish_reason(stop) == reason
