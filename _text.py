"""Text shortened for a line a person reads (a log record, a progress line, an error)."""

from __future__ import annotations

__all__ = ("clipped",)


def clipped(text: str, limit: int = 500) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and how long it was.

    A tool's error message may now be as long as its result limit (100,000 characters
    by default): the model reads it all, a log line or a progress line does not.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters in all)"
