"""What both SDK providers say about an error the SDK gave up on: how often it
was retried, and whether the same call could ever succeed."""

from __future__ import annotations

from typing import Protocol

__all__ = ("is_permanent", "retry_note")

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


class _Headers(Protocol):
    def get(self, key: str) -> str | None: ...


class _Sent(Protocol):
    @property
    def headers(self) -> _Headers: ...


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
    if response_headers is not None and response_headers.get("x-should-retry") == "false":
        return " (not retried: the server's x-should-retry header said not to)"
    return " (not retried)"
