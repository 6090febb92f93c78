"""Turning message content into a safe attribute value: serialise, redact, truncate."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import msgspec

from regiment.errors import ConfigError

__all__ = ("CAPTURE_CONTENT_ENV", "capture_from_env", "redact", "to_attribute_text", "truncate")

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# Besides true/false we accept the content modes of opentelemetry-util-genai;
# every mode that puts content on spans counts as "on".
_TRUE = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
_FALSE = frozenset({"", "false", "0", "no", "off", "no_content", "event_only"})

_REDACTED = "[REDACTED]"
_CUT_MARKER = "...[truncated]"
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
    """Serialise content for a span attribute: JSON (strings as they are), redacted, truncated.

    Args:
        value: a string, or anything ``msgspec`` can encode as JSON (structs,
            dicts, lists, ...). Values it cannot encode fall back to ``repr``.
        limit: the most characters to keep.
    """
    if isinstance(value, str):
        text = value
    else:
        try:
            text = msgspec.json.encode(value).decode()
        except (TypeError, msgspec.EncodeError):
            text = repr(value)
    # Cut before redacting so a huge payload stays cheap; the margin keeps a key
    # that straddles the limit long enough to still be recognised as one.
    return truncate(redact(text[: limit + _REDACT_MARGIN]), limit)
