"""Message content in the shapes of the GenAI JSON schemas, cut to a limit as valid JSON.

``gen_ai.input.messages``, ``gen_ai.output.messages`` and
``gen_ai.system_instructions`` hold JSON that follows the schemas published
with the GenAI semantic conventions: a message is ``{"role", "parts"}`` (an
output message also has ``finish_reason``), and a part is typed: ``text`` with
``content``, ``tool_call`` with ``id``/``name``/``arguments``,
``tool_call_response`` with ``id``/``response``, ``reasoning`` with ``content``.

The builders here make those values; :func:`fit_json` turns one into text of at
most ``limit`` characters by cutting each string part on its own (never the
JSON around it), so what lands on a span always parses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from regiment.telemetry._content import GenAIValue, fit_json

__all__ = (
    "GenAIValue",
    "chat_message",
    "finish_reason",
    "fit_json",
    "output_message",
    "reasoning_part",
    "text_part",
    "tool_call_part",
    "tool_call_response_part",
)


# Provider stop reasons -> the schema's FinishReason values (others pass as they are).
_FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "stop": "stop",
    "max_tokens": "length",
    "length": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "refusal": "content_filter",
    "content_filter": "content_filter",
    "error": "error",
}


def text_part(content: str) -> dict[str, GenAIValue]:
    """A ``text`` part."""
    return {"type": "text", "content": content}


def reasoning_part(content: str) -> dict[str, GenAIValue]:
    """A ``reasoning`` part (the model's thinking)."""
    return {"type": "reasoning", "content": content}


def tool_call_part(call_id: str, name: str, arguments: GenAIValue) -> dict[str, GenAIValue]:
    """A ``tool_call`` part: the model asks for ``name`` with ``arguments``."""
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def tool_call_response_part(call_id: str, response: GenAIValue) -> dict[str, GenAIValue]:
    """A ``tool_call_response`` part: what the tool call ``call_id`` returned."""
    return {"type": "tool_call_response", "id": call_id, "response": response}


def chat_message(role: str, parts: Sequence[GenAIValue]) -> dict[str, GenAIValue]:
    """An input message: ``role`` is ``system``, ``user``, ``assistant`` or ``tool``."""
    return {"role": role, "parts": list(parts)}


def output_message(parts: Sequence[GenAIValue], stop_reason: str) -> dict[str, GenAIValue]:
    """The model's reply as an output message (role ``assistant``)."""
    return {"role": "assistant", "parts": list(parts), "finish_reason": finish_reason(stop_reason)}


def finish_reason(stop_reason: str) -> str:
    """A provider's stop reason as the schema's ``FinishReason`` (unknown ones unchanged)."""
    return _FINISH_REASONS.get(stop_reason, stop_reason or "stop")
