"""Text for a line a person reads (a log record, a progress line, an error): shortened, and
safe to show on a terminal."""

from __future__ import annotations

__all__ = ("clipped", "counted", "json_shown", "shown", "shown_text", "visible")

# Control characters (C0 but tab and newline, DEL, C1) as the escapes Python writes them.
_CONTROLS = {
    code: f"\\x{code:02x}"
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if chr(code) not in "\t\n"
}


def clipped(text: str, limit: int = 500) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and how long it was.

    A tool's error message may now be as long as its result limit (100,000 characters
    by default): the model reads it all, a log line or a progress line does not.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters in all)"


def counted(count: int, noun: str, *, grouped: bool = False) -> str:
    """``count`` and ``noun``, the noun plural unless ``count`` is 1: ``1 tool call``,
    ``0 tool calls``, ``2 steps``; ``grouped`` writes thousands apart (``1,204 tokens``).
    ``noun`` is the singular, made plural with an ``s`` (every noun a line counts is so)."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun}" if count == 1 else f"{number} {noun}s"


def visible(text: str) -> str:
    """``text`` with its control characters written as ``\\xNN``, for a terminal: what a
    model or a tool wrote (an escape sequence, a bell) cannot move its cursor, clear it,
    retitle it or write to its clipboard."""
    return text.translate(_CONTROLS)


# A value a client or a command line sent (a run or request id, a path, a query
# parameter), as an error names it: whole when short, else cut, so a 10,000-character id is
# not sent back in full (nor logged so) yet stays recognisable by its start and its end.
_LIMIT = 80
_HEAD = 48
_TAIL = 16


def shown_text(value: str) -> str:
    """``value`` if it has at most 80 characters, else its first 48, ``…``, its last 16
    and how long it was: ``run-1-aaaa…zzzz (5,000 characters)``."""
    if len(value) <= _LIMIT:
        return value
    return f"{value[:_HEAD]}…{value[-_TAIL:]} ({len(value):,} characters)"


def shown(value: str) -> str:
    """``value`` quoted (``repr``) if it has at most 80 characters, else cut as by
    ``shown_text`` inside the quotes: ``'run-1-aaaa…zzzz' (5,000 characters)``."""
    if len(value) <= _LIMIT:
        return repr(value)
    return f"{value[:_HEAD] + '…' + value[-_TAIL:]!r} ({len(value):,} characters)"


def json_shown(value: object, limit: int = _LIMIT) -> str:
    """``value`` as JSON text, cut to ``limit`` characters (``...`` marks a cut): how a
    message to a model quotes what it sent (``null``, ``"abc"``), as a model reads JSON."""
    import json  # on the error path only

    try:
        text = json.dumps(value, ensure_ascii=False, default=str)  # str: what JSON has no word for
    except (TypeError, ValueError, RecursionError):  # keys JSON cannot have, a cycle
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
