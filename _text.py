"""Text for a line a person reads (a log record, a progress line, an error): shortened, and
safe to show on a terminal."""

from __future__ import annotations

__all__ = ("clipped", "visible")

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


def visible(text: str) -> str:
    """``text`` with its control characters written as ``\\xNN``, for a terminal: what a
    model or a tool wrote (an escape sequence, a bell) cannot move its cursor, clear it,
    retitle it or write to its clipboard."""
    return text.translate(_CONTROLS)
