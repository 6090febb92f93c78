"""Turning message content into a safe attribute value: serialise, redact, cut as valid JSON."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

import msgspec

from regiment.errors import ConfigError

__all__ = (
    "CAPTURE_CONTENT_ENV",
    "GenAIValue",
    "capture_from_env",
    "fit_json",
    "redact",
    "to_attribute_text",
    "truncate",
)

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

GenAIValue: TypeAlias = (
    "str | int | float | bool | Sequence[GenAIValue] | Mapping[str, GenAIValue] | None"
)
"""A JSON value as the builders make it."""

# Besides true/false we accept the content modes of opentelemetry-util-genai;
# every mode that puts content on spans counts as "on".
_TRUE = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
_FALSE = frozenset({"", "false", "0", "no", "off", "no_content", "event_only"})

_REDACTED = "[REDACTED]"
_CUT_MARKER: Final = "...[truncated]"
_SECRET_KEY = re.compile(r"(?i)^(?:x-api-key|api[_-]?key|authorization)$")
# In message-shaped values only these fields hold content; the rest (types, roles,
# ids, names) is structure the schemas constrain, so it is never cut.
_CONTENT_KEYS: Final = frozenset({"content", "response", "arguments"})
_REDACT_MARGIN = 256
# Order matters: the header/assignment forms first, so their whole value goes.
_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"""(?i)(["']?(?:x-api-key|api[_-]?key|authorization)["']?\s*[:=]\s*["']?)"""
            r"""(?:bearer\s+)?[^\s"',;}]+"""
        ),
        r"\g<1>" + _REDACTED,
    ),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*"), "Bearer " + _REDACTED),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{8,}"), _REDACTED),
)


def capture_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Read ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

    Args:
        environ: the environment to read (``os.environ`` when ``None``).

    Returns:
        Whether message content may be recorded; unset means no.

    Raises:
        ConfigError: the variable holds something that is neither true nor false.
    """
    raw = (os.environ if environ is None else environ).get(CAPTURE_CONTENT_ENV, "")
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(
        f"{CAPTURE_CONTENT_ENV}={raw!r} is not understood; set it to 'true' to record "
        "message content on spans or 'false' (the default) to leave it out"
    )


def redact(text: str) -> str:
    """Replace anything that looks like an API key or bearer token with ``[REDACTED]``."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, ending with a marker when cut."""
    if len(text) <= limit:
        return text
    if limit <= len(_CUT_MARKER):
        return text[:limit]
    return text[: limit - len(_CUT_MARKER)] + _CUT_MARKER


def to_attribute_text(value: object, limit: int) -> str:
    """Serialise content for a span attribute: text as it is, anything else as JSON;
    redacted, and cut to ``limit`` characters.

    A value that encodes as JSON stays valid JSON when cut: its strings are
    shortened, not the text (see ``fit_json``).

    Args:
        value: a string, or anything ``msgspec`` can encode as JSON (structs,
            dicts, lists, ...). Values it cannot encode fall back to ``repr``.
        limit: the most characters to keep.
    """
    if isinstance(value, str):
        # Cut before redacting so a huge payload stays cheap; the margin keeps a key
        # that straddles the limit long enough to still be recognised as one.
        return truncate(redact(value[: limit + _REDACT_MARGIN]), limit)
    try:
        fitted = fit_json(msgspec.to_builtins(value), limit)
    except (TypeError, msgspec.EncodeError):
        fitted = None
    if fitted is not None:
        return fitted
    return truncate(redact(repr(value)[: limit + _REDACT_MARGIN]), limit)


def fit_json(value: GenAIValue, limit: int, *, messages: bool = False) -> str | None:
    """``value`` as JSON text of at most ``limit`` characters, secrets redacted.

    Strings are redacted one by one (so a redaction never breaks the JSON). When
    the text is too long, every content string longer than a common cap is cut to
    it, ending with ``...[truncated]``, using the largest cap that fits; if even
    that does not fit, the oldest items of a top-level list are dropped.

    Args:
        value: the JSON value.
        limit: the most characters of the text.
        messages: ``value`` is message-shaped (messages or parts): only the
            strings under ``content``, ``response`` and ``arguments`` may be cut.
            Otherwise every string may be.

    Returns:
        The JSON text, or ``None`` when not even an empty value fits ``limit``.
    """
    clean = _redacted(value)
    while True:
        text = _fit_strings(clean, limit, inside=not messages)
        if text is not None:
            return text
        if not isinstance(clean, list) or not clean:
            return None
        clean = clean[1:]


def _encode(value: GenAIValue) -> str:
    return msgspec.json.encode(value).decode()


def _redacted(value: GenAIValue) -> GenAIValue:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {
            key: _REDACTED if _SECRET_KEY.match(key) else _redacted(item)
            for key, item in value.items()
        }
    if isinstance(value, Sequence):
        return [_redacted(item) for item in value]
    return value


def _fit_strings(value: GenAIValue, limit: int, *, inside: bool) -> str | None:
    text = _encode(value)
    if len(text) <= limit:
        return text
    longest = _longest_string(value, inside)
    best: str | None = None
    low, high = 0, longest - 1
    while low <= high:  # the largest cap whose encoding fits
        cap = (low + high) // 2
        candidate = _encode(_capped(value, cap, inside))
        if len(candidate) <= limit:
            best, low = candidate, cap + 1
        else:
            high = cap - 1
    return best


def _longest_string(value: GenAIValue, inside: bool) -> int:
    if isinstance(value, str):
        return len(value) if inside else 0
    if isinstance(value, Mapping):
        return max(
            (_longest_string(item, inside or key in _CONTENT_KEYS) for key, item in value.items()),
            default=0,
        )
    if isinstance(value, Sequence):
        return max((_longest_string(item, inside) for item in value), default=0)
    return 0


def _capped(value: GenAIValue, cap: int, inside: bool) -> GenAIValue:
    if isinstance(value, str):
        if not inside or len(value) <= cap:
            return value
        return value[: max(0, cap - len(_CUT_MARKER))] + _CUT_MARKER[: min(cap, len(_CUT_MARKER))]
    if isinstance(value, Mapping):
        return {
            key: _capped(item, cap, inside or key in _CONTENT_KEYS) for key, item in value.items()
        }
    if isinstance(value, Sequence):
        return [_capped(item, cap, inside) for item in value]
    return value
