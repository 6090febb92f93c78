"""The JSON object in a critic's or a compressor's reply, read leniently.

A model asked for "JSON only" may fence it, wrap it in prose, or word a field
another way than asked (``null`` for no feedback, one string for a list of
questions). What the reply plainly means is read; only what it does not say is
missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

__all__ = ("json_objects", "texts_of")


# Where an object may start, at most: a reply is read, not searched without end.
_STARTS = 64


def json_objects(text: str) -> Iterator[dict[str, object]]:
    """The JSON objects ``text`` may hold: each fenced block, the span from its first
    ``{`` to its last ``}``, then the object that starts at each ``{`` (prose around
    it may hold braces of its own); candidates that do not parse are skipped."""
    start, end = text.find("{"), text.rfind("}")
    whole = [text[start : end + 1]] if 0 <= start < end else []
    for candidate in [*re.findall(r"```(?:json)?\s*(.*?)```", text, re.S), *whole]:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            continue
        if isinstance(value, dict):
            yield value
    decoder = json.JSONDecoder()
    for at in [m.start() for m in re.finditer("{", text)][:_STARTS]:
        try:
            value, _ = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value


def texts_of(value: object) -> tuple[str, ...]:
    """The non-blank texts in ``value``: a string, a list of them, or ``null``; any
    other JSON value is written as compact JSON."""
    items = value if isinstance(value, list) else [value]
    texts = (i if isinstance(i, str) else _compact(i) for i in items if i is not None)
    return tuple(t.strip() for t in texts if t.strip())


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
