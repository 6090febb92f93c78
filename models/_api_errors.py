"""What both SDK providers say about an error the SDK gave up on: how often it
was retried, and whether the same call could ever succeed."""

from __future__ import annotations

import email.utils
import json
import math
import random
import time
from typing import Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx2

from regiment.errors import ModelAPIError

__all__ = (
    "LONGEST_WAIT",
    "backoff",
    "broke_off",
    "failed_mid_stream",
    "is_permanent",
    "long_wait",
    "not_billed",
    "request_note",
    "retry_note",
    "shown_url",
    "stream_failed",
    "transient_error",
    "without_echo",
    "transient_stream_failure",
    "unreadable_reply",
)

E = TypeVar("E", bound=BaseException)

# The longest a call waits before the SDK retries it when the server asks for a wait
# (retry-after), as the openai SDK does; the anthropic SDK waits as long as it is
# told, so a daily limit's "retry-after: 3600" held a call an hour per retry, silently.
LONGEST_WAIT = 120.0

# Statuses that answer the same call the same way every time: the key, its
# permissions, the model's name and the request's shape (model, settings, tools)
# are the same for every step a worker runs, whatever a replan changes.
_PERMANENT = frozenset({400, 401, 403, 404, 422})
# ... except an invalid request that is only too long: a smaller step may fit.
_TOO_LONG = (
    "context_length_exceeded",
    "string_above_max_length",
    "too long",  # Anthropic's "prompt is too long: ...", "string too long"
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
)


# Both SDKs back a retry off exponentially from 0.5 s up to 8 s, less up to a quarter.
_FIRST_WAIT, _LONGEST_BACKOFF = 0.5, 8.0

# Set on a ModelError for a stream that began (200) and then failed in a way a new
# attempt may not: an overload or server error event, a connection that broke off.
_TRANSIENT = "_regiment_transient_stream"


def backoff(retry: int) -> float:
    """The seconds to wait before retry number ``retry`` (0 for the first), as the
    SDKs wait before retrying an overloaded or failed call."""
    return min(_FIRST_WAIT * 2.0 ** min(retry, 32), _LONGEST_BACKOFF) * (1 - 0.25 * random.random())


def stream_failed(error: E, *, transient: bool = True) -> E:
    """``error``, marked as a stream that failed after it began; ``transient``: the
    same call may well succeed when made again (see ``transient_stream_failure``)."""
    setattr(error, _TRANSIENT, transient)
    return error


# Error types of an error event in a stream that a new attempt may not meet, as the
# statuses the SDKs retry (429, 5xx, Anthropic's 529): the Messages API's, OpenAI's,
# and those compatible servers send (vLLM names the exception class).
_TRANSIENT_TYPES = frozenset(
    {
        "overloaded_error",
        "api_error",
        "rate_limit_error",
        "timeout_error",
        "server_error",
        "rate_limit_exceeded",
        "timeout",
        "InternalServerError",
        "ServiceUnavailableError",
    }
)


def transient_error(error_type: str | None, code: str | int | None = None) -> bool:
    """Whether an error event sent mid-stream (its type, and the status some servers
    give as its ``code``) says an overload, a rate limit or a server's failure."""
    status = code if isinstance(code, int) else int(code) if code and code.isdigit() else None
    return error_type in _TRANSIENT_TYPES or (
        status is not None and (status == 429 or status >= 500)
    )


def transient_stream_failure(error: BaseException) -> bool:
    """Whether ``error`` is a stream that began and then failed transiently."""
    return getattr(error, _TRANSIENT, False) is True


# Set on a stream failure whose request was not billed: Claude's error event sent in
# place of message_start, the streamed form of an error status (a 529 overload).
_NOT_BILLED = "_regiment_not_billed"


def not_billed(error: E) -> E:
    """``error``, marked as a failed stream whose request the API does not bill."""
    setattr(error, _NOT_BILLED, True)
    return error


def broke_off(cause: BaseException) -> str:
    """How a stream that began ended early, and what to do: a server that stalled (sent
    nothing for a whole read timeout) is not a network that broke."""
    if not isinstance(cause, httpx2.TimeoutException):
        return f"broke off ({cause!r}); check the network and any proxy in between"
    try:
        limit = cause.request.extensions.get("timeout", {}).get("read")
    except RuntimeError:  # an exception raised without its request
        limit = None
    waited = f" {limit:g} s" if isinstance(limit, int | float) else " a whole read timeout"
    return (
        f"stalled: the server sent nothing more for{waited} ({type(cause).__name__}); "
        "raise the model's timeout (or the role's ModelSettings.timeout) if it is slow, "
        "or check the server"
    )


def no_answer(timed_out: bool, request: object) -> tuple[str, str]:
    """What a call that got no answer met (``did not answer in 0.2 s``, ``could not be
    reached``) and what to do: a timeout to raise is no help when nothing listens."""
    if not timed_out:
        return "could not be reached", "check the network and base_url (is the server running?)"
    timeouts = getattr(request, "extensions", {}).get("timeout", {})
    limit = timeouts.get("read") if isinstance(timeouts, dict) else None
    waited = f"in {limit:g} s" if isinstance(limit, int | float) else "in time"
    return f"did not answer {waited}", (
        "raise the model's timeout (or the role's ModelSettings.timeout) if it is slow, "
        "or check the network and base_url"
    )


def failed_mid_stream(error: BaseException) -> bool:
    """Whether ``error`` is a stream that began (the server read the request) and
    failed, its request billed (``not_billed`` says otherwise)."""
    return hasattr(error, _TRANSIENT) and not hasattr(error, _NOT_BILLED)


# The most of a server's error text an error message keeps (some quote the whole request).
_LONGEST_TEXT = 500
# A run of this many characters of the error text that the prompt has too is a quote of it.
_QUOTE = 24


def request_note(request_id: str | None) -> str:
    """``request id X`` for an error message; local servers (Ollama, vLLM) send none."""
    return "no request id" if request_id is None else f"request id {request_id}"


def without_echo(text: str, sent: bytes | None) -> str:
    """A server's error text cut to a bound, with what it quotes of the request's prompt
    (its system prompt and messages, in ``sent``, the request body; whole or in part,
    raw or escaped) replaced by a placeholder: some servers echo the input in a 400,
    and error texts reach logs, events and journals whether or not content is captured."""
    if len(text) > _LONGEST_TEXT:
        text = f"{text[:_LONGEST_TEXT]}... ({len(text) - _LONGEST_TEXT} more characters)"
    prompt = _prompt_text(sent)
    if len(prompt) < _QUOTE:
        return text
    kept: list[str] = []
    start = at = 0
    while at + _QUOTE <= len(text):
        if text[at : at + _QUOTE] not in prompt:
            at += 1
            continue
        end = at + _QUOTE
        while end < len(text) and text[at : end + 1] in prompt:
            end += 1
        kept += [text[start:at], f"[{end - at} characters of the request]"]
        start = at = end
    return "".join([*kept, text[start:]])


def _prompt_text(sent: bytes | None) -> str:
    """A request body's system prompt and message strings, as sent and escaped as
    JSON and as Python would quote them, apart (a quote never spans two)."""
    try:
        body = json.loads(sent or b"{}")
    except (ValueError, RecursionError):
        return ""
    found: list[str] = []
    stack: list[object] = (
        [body.get(key) for key in ("system", "messages")] if isinstance(body, dict) else []
    )
    while stack:
        value = stack.pop()
        if isinstance(value, str) and len(value) >= _QUOTE:
            found += [value, json.dumps(value)[1:-1], repr(value)[1:-1]]
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return "\x00".join(found)


class _Headers(Protocol):
    def get(self, key: str) -> str | None: ...


class _Sent(Protocol):
    @property
    def headers(self) -> _Headers: ...


def server_wait(headers: _Headers) -> float | None:
    """The seconds a reply asks the client to wait before it tries again
    (``retry-after-ms``, else ``retry-after`` in seconds or as a date), if it says."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            date = email.utils.parsedate_tz(value)
            if date is None:
                continue
            seconds = email.utils.mktime_tz(date) - time.time()
        if math.isfinite(seconds):
            return seconds
    return None


def long_wait(headers: _Headers | None) -> float | None:
    """The wait a reply asks for, when it is longer than a call waits (``LONGEST_WAIT``)."""
    wait = server_wait(headers) if headers is not None else None
    return wait if wait is not None and wait > LONGEST_WAIT else None


def is_permanent(status: int, code: str | None, text: str) -> bool:
    """Whether an error status would come back for the same call every time (see
    ``ModelAPIError.permanent``)."""
    if status == 429 and code == "insufficient_quota":  # OpenAI: no credit left, not a rate
        return True
    if status not in _PERMANENT:
        return False
    said = f"{code or ''} {text}".lower()
    return not any(mark in said for mark in _TOO_LONG)


def retry_note(
    request: _Sent | None, max_retries: int, response_headers: _Headers | None = None
) -> str:
    """How often the SDK retried a call before it gave up, as the SDK's last
    request says (its ``x-stainless-retry-count`` header), for an error message:
    `` after 2 retries``, `` (not retried: max_retries=0)``, ..."""
    sent = request.headers.get("x-stainless-retry-count") if request is not None else None
    taken = int(sent) if sent is not None and sent.isdigit() else None
    if taken is None:  # a client that does not say: only the most it may have taken
        if max_retries == 0:
            return " (not retried: max_retries=0)"
        return f" after up to {max_retries} retries"
    if taken > 0:
        return f" after {taken} {'retry' if taken == 1 else 'retries'}"
    if max_retries == 0:
        return " (not retried: max_retries=0)"
    if (wait := long_wait(response_headers)) is not None:
        return (
            f" (not retried: the server asked to wait {wait:.0f} s, more than the "
            f"{LONGEST_WAIT:.0f} s a call waits; try again after that)"
        )
    if response_headers is not None and response_headers.get("x-should-retry") == "false":
        return " (not retried: the server's x-should-retry header said not to)"
    return " (not retried)"


def shown_url(url: object) -> str:
    """``url`` as a message or a log may show it: without the password its user part may
    hold (``http://ann:...@host/v1`` is shown ``http://ann@host/v1``), as an error is
    journaled, logged, printed and served to others."""
    text = str(url)
    try:
        parts = urlsplit(text)
        if parts.password is None:
            return text
    except ValueError:  # not a URL urllib can read (a bad port): show none of it
        return "(a URL that could not be read)"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=user + parts.netloc.rpartition("@")[2]))


def unreadable_reply(
    exc: BaseException, *, reading: bool, reply: str, advice: str, request_id: str | None
) -> ModelAPIError | None:
    """The error of a ``reply`` (``"the ... API sent a reply"``) that ``exc`` says could not
    be read, with what to do (``advice``), marked as a stream failure not worth a retry;
    ``None`` when ``exc`` is not that (re-raise it). Outside the reading of a stream
    (``reading`` false), only a body that is not JSON, or nests too deep to read, is: the
    SDK reads it inside the call."""
    if not reading and not isinstance(exc, json.JSONDecodeError | RecursionError):
        return None
    error = ModelAPIError(
        f"{reply} that could not be read ({type(exc).__name__}: {exc}; "
        f"{request_note(request_id)}); {advice}",
        request_id=request_id,
    )
    return stream_failed(error, transient=False)
