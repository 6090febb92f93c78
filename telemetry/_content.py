"""Turning message content into a safe attribute value: serialise, redact, cut as valid JSON."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias

import msgspec

from regiment.errors import ConfigError

__all__ = (
    "CAPTURE_CONTENT_ENV",
    "GenAIValue",
    "capture_from_env",
    "fit_json",
    "redact",
    "redacted_cut",
    "redacted_tail",
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
# A field or variable named like a secret: the name ends in one of these words
# (``password``, ``DB_PASSWORD``, ``X-Auth-Token``, ``aws_secret_access_key``; not ``tokens``).
_SECRET_WORD = (
    r"(?:token|secret|password|passwd|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key)"
)
_SECRET_NAME = rf"(?:[A-Za-z0-9]+[_.-])*{_SECRET_WORD}"
_SECRET_KEY = re.compile(rf"(?i)^(?:x-api-key|authorization|{_SECRET_NAME})$")
# In free text only the name's last word is matched (what comes before it stays as
# it is): a pattern over the whole name would be quadratic on text like "a-a-a-...".
_NAME_END = rf"(?<![A-Za-z0-9]){_SECRET_WORD}"
_CONTENT_KEYS: Final = frozenset({"content", "response", "arguments"})
_REDACT_MARGIN = 256
_QUOTED = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""  # a quoted value, escapes and all
_BARE = r"""[^\s"',;&}\]]+"""  # an unquoted value: up to a space or a separator
# An unquoted ``name: value`` is also prose ("the next token: a word"), so there the
# value must look like a credential: a digit or a symbol in it, or 16 characters.
# A value an earlier pattern redacted is not taken again.
_CREDENTIAL = rf"""(?=[^\s"',;&}}\]]*[0-9@#$%^*+/=~]|[^\s"',;&}}\]]{{16}}){_BARE}"""
_VALUE = rf"(?!\[REDACTED\])(?P<value>{_QUOTED}|{_BARE})"
_CREDENTIAL_VALUE = rf"(?!\[REDACTED\])(?P<value>{_QUOTED}|{_CREDENTIAL})"


def _keep_name(match: re.Match[str]) -> str:
    """``name: [REDACTED]``, quoted if the value or the name was (so JSON stays JSON)."""
    value = match["value"]
    quote = value[0] if value[0] in "\"'" else match.groupdict().get("q") or ""
    return match["name"] + quote + _REDACTED + quote


# Order matters: a private key block first (its body spans lines), then the
# header/assignment forms, so their whole value goes; then tokens by their shape.
_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (
        # To its END line, or to the end of the text if it was cut before that.
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*\Z)",
            re.DOTALL,
        ),
        _REDACTED,
    ),
    # A URL's password (postgresql://app:PASSWORD@db/runs, a base_url with userinfo); the
    # user name stays. Bounded, so text with many "://" is not scanned over and over.
    (
        re.compile(
            r"(?i)(?P<name>\b[a-z][a-z0-9+.\-]{0,30}://[^\s/:@]{0,256}:)[^\s/@]{1,256}(?=@)"
        ),
        lambda match: match["name"] + _REDACTED,
    ),
    # Headers and fields that always hold a credential: any value, a scheme and all.
    (
        re.compile(
            r"""(?i)(?P<name>(?P<q>["']?)(?:x-api-key|api[_-]?key|authorization)(?P=q)\s*[:=]\s*)"""
            rf"""(?P<value>{_QUOTED}|(?:(?:bearer|basic|token)\s+)?[^\s"',;}}]+)"""
        ),
        _keep_name,
    ),
    # "password": "...", 'client_secret': ... (JSON, Python reprs): any value.
    (
        re.compile(rf"""(?i)(?P<name>(?P<q>["']){_SECRET_NAME}(?P=q)\s*[:=]\s*){_VALUE}"""),
        _keep_name,
    ),
    # password=..., GITHUB_TOKEN=..., ?access_token=...&: any value.
    (
        re.compile(rf"(?i)(?P<name>{_NAME_END}\s*=\s*){_VALUE}"),
        _keep_name,
    ),
    # password: hunter2, X-Auth-Token: ... (YAML, headers): a credential-like value.
    (
        re.compile(rf"(?i)(?P<name>{_NAME_END}\s*:\s*){_CREDENTIAL_VALUE}"),
        _keep_name,
    ),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*"), "Bearer " + _REDACTED),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{8,}"), _REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), _REDACTED),  # AWS access key ids
    (re.compile(r"\bgh[opusr]_[A-Za-z0-9]{30,}\b"), _REDACTED),  # GitHub tokens
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), _REDACTED),  # GitHub fine-grained tokens
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), _REDACTED),  # Slack tokens
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"), _REDACTED),  # Google API keys
    # JWTs: a JSON header (base64url of '{"'), a payload, a signature (maybe empty).
    (re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"), _REDACTED),
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
    """Replace what looks like a secret with ``[REDACTED]``.

    That is: API keys (Anthropic/OpenAI ``sk-``, AWS access key ids, Google
    ``AIza`` keys), bearer and basic credentials, GitHub and Slack tokens, JWTs,
    private key (PEM) blocks, a URL's password (``scheme://user:[REDACTED]@host``),
    and the value of a field or variable named like a
    secret (a name ending in token, secret, password, passwd, api_key,
    access_key, private_key or secret_key, in any case: ``"password": "..."``,
    ``DB_PASSWORD=...``, ``X-Auth-Token: ...``). An unquoted ``name: value``
    counts only when the value has a digit or symbol in it or is 16 characters
    long, so prose such as "the next token: a word" is left alone.
    """
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


def redacted_cut(text: str, limit: int) -> str:
    """``text`` redacted and cut to ``limit`` characters (see ``truncate``). It is cut
    before it is redacted, so a huge text (a 1 MB tool result, an error quoting one) costs
    what ``limit`` characters cost; the margin keeps a key that straddles the limit long
    enough to still be recognised as one."""
    return truncate(redact(text[: limit + _REDACT_MARGIN]), limit)


def redacted_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, redacted (a stack's telling frames are
    its innermost); cut before it is redacted, as in ``redacted_cut``."""
    return redact(text[-(limit + _REDACT_MARGIN) :])[-limit:]


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
        return redacted_cut(value, limit)
    try:
        fitted = fit_json(msgspec.to_builtins(value), limit)
    except (TypeError, msgspec.EncodeError):
        fitted = None
    if fitted is not None:
        return fitted
    return redacted_cut(repr(value), limit)


def fit_json(value: GenAIValue, limit: int, *, messages: bool = False) -> str | None:
    """``value`` as JSON text of at most ``limit`` characters, secrets redacted.

    Strings are redacted one by one (so a redaction never breaks the JSON), each cut
    first to a little more than ``limit`` (no longer one can fit, and a huge one would
    cost its whole length in every pattern; a longer one is still marked cut). When
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
    clean = _redacted(value, limit + _REDACT_MARGIN)
    while True:
        text = _fit_strings(clean, limit, inside=not messages)
        if text is not None:
            return text
        if not isinstance(clean, list) or not clean:
            return None
        clean = clean[1:]


def _encode(value: GenAIValue) -> str:
    return msgspec.json.encode(value).decode()


def _redacted(value: GenAIValue, room: int | None = None) -> GenAIValue:
    """``value`` with its strings (each first cut to ``room``, if given) redacted."""
    if isinstance(value, str):
        return redact(value if room is None else value[:room])
    if isinstance(value, Mapping):
        return {
            key: _REDACTED if _SECRET_KEY.match(key) else _redacted(item, room)
            for key, item in value.items()
        }
    if isinstance(value, Sequence):
        return [_redacted(item, room) for item in value]
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
