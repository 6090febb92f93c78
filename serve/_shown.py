"""A value a client sent (a run or request id, a path, a query parameter), as an error's
detail names it: whole when short, else cut, so a 10,000-character id is not sent back in
full (nor logged so) yet stays recognisable by its start and its end."""

from __future__ import annotations

__all__ = ("shown", "shown_text")

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
