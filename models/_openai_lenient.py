"""What compatible Chat Completions servers send in place of the API's own shapes.

The API's message ``content`` is text, and a tool call's ``arguments`` JSON text; some
servers send ``content`` as a list of parts (Mistral's reasoning models, as
``[{"type": "thinking", ...}, {"type": "text", "text": ...}]``) and ``arguments`` as
a JSON object. Both are read as the text they stand for, in a whole reply and in a
stream, rather than failing the call or putting a list where the reply's text goes.
"""

from __future__ import annotations

import json

import msgspec

__all__ = ("ContentPart", "arguments_text", "content_text")


class ContentPart(msgspec.Struct, frozen=True):
    """One part of a ``content`` list in a streamed chunk (only text parts are kept)."""

    type: str | None = None
    text: str | None = None


def content_text(content: object) -> str:
    """A message's (or a chunk's) ``content`` as text: its text parts, joined, if it is
    a list (thinking and other parts are not the answer); ``ValueError`` for anything
    else (a number, an object): the reply cannot be read, rather than read as empty."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):  # as a stream's chunk with such content is refused
        raise ValueError(f"the message's content is a {type(content).__name__}, not text")
    pieces: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else getattr(part, "type", None)
        text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
        if kind in ("text", None) and isinstance(text, str):
            pieces.append(text)
    return "".join(pieces)


def arguments_text(arguments: object) -> str:
    """A tool call's ``arguments`` as the JSON text the API sends (``""`` for none)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments)
