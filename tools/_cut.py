"""A tool result as the model may read it: valid UTF-8 text, at most so many characters.

A tool may return a whole file or a 20 MB page; sent on, it would fill the model's
context (and the journal, the events and, with content capture, the spans) and cost
the run its tokens. So a result longer than its limit is cut, and the model is told
so, and how to ask for less. A result is cut once, where the call ends, so the journal
holds what the model read, and a resumed run replays exactly that.

Text that is not valid UTF-8 (a lone surrogate, such as ``surrogateescape`` makes of
undecodable bytes) cannot be sent to a provider at all (the request fails before it
leaves): such characters are written as their ``\\udcff`` escape. A NaN or an
infinity, which JSON has no word for (a journal writes it as ``null``), becomes the
string the model reads (``"NaN"``), so a resumed run replays what the model read.
"""

from __future__ import annotations

import json
import logging
import math
from typing import cast

import msgspec

from regiment._json import JsonValue
from regiment.tools._result import ToolResult

__all__ = ("DEFAULT_MAX_RESULT_CHARS", "fitted")

DEFAULT_MAX_RESULT_CHARS = 100_000
"""The longest result (in characters of ``ToolResult.text``) a model gets by default."""

_log = logging.getLogger("regiment.tools")


def fitted(result: ToolResult, limit: int) -> ToolResult:
    """``result`` as the model may read it: valid text, cut to ``limit`` characters
    plus a note saying it was cut (a WARNING on ``regiment.tools`` says so too)."""
    content = result.content
    if not isinstance(content, str):
        try:
            text = json.dumps(content, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except ValueError:  # NaN or an infinity: JSON has none (a journal writes null)
            content = _cleaned(content)
            result = msgspec.structs.replace(result, content=content)
            try:
                text = result.text
            except ValueError as exc:  # an int of more digits than Python writes as text
                return _unwritable(result, exc)
    elif len(content) <= limit and content.isascii():
        return result  # the usual result: nothing to do
    else:
        text = content
    if len(text) <= limit:
        if _valid(text):
            return result
        return msgspec.structs.replace(result, content=_cleaned(content))
    kept = _escaped(text[:limit])
    what = "failed call's error" if result.is_error else "result"
    _log.warning(
        "tool %r: its %s was %d characters, over the limit of %d: the model (and the "
        "journal) get the first %d and a note that it was cut; to send more, raise the "
        "tool's max_result_chars, or its worker's max_tool_result_chars",
        result.tool_name,
        what,
        len(text),
        limit,
        limit,
    )
    return msgspec.structs.replace(result, content=kept + _note(len(text), limit))


def _unwritable(result: ToolResult, exc: ValueError) -> ToolResult:
    """An error result for a value that cannot be written as text at all: it ran, so
    say so (a model reading "failed" may call it again), and what to return."""
    message = (
        f"TypeError: tool {result.tool_name!r} ran, but its result cannot be written as "
        f"text ({exc}), so it cannot be shown; return such a value as a string"
    )
    return msgspec.structs.replace(result, content=message, is_error=True, error_type="TypeError")


def _note(length: int, limit: int) -> str:
    return (
        f"\n\n[cut: this result was {length:,} characters long, over the limit of "
        f"{limit:,}, so only its first {limit:,} characters are above. If you need what "
        "was cut, call the tool again asking for less: a narrower query, fewer items, or "
        "one part at a time.]"
    )


def _valid(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    if _valid(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _cleaned(value: JsonValue) -> JsonValue:
    """``value`` with every string in it made valid text, and every NaN or infinity
    a string (its structure kept)."""
    if isinstance(value, str):
        return _escaped(value)
    if isinstance(value, list):
        return [_cleaned(item) for item in value]
    if isinstance(value, dict):
        return {_escaped(key): _cleaned(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # "NaN", "Infinity", "-Infinity": what the model read
    return cast(JsonValue, value)
