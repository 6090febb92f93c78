"""What the Anthropic API's errors say, as ours: the status, the error type, what to do."""

from __future__ import annotations

import anthropic
import httpx2

from regiment.errors import ModelAPIError, ModelConnectionError
from regiment.models._api_errors import (
    broke_off as stream_ended,
)
from regiment.models._api_errors import (
    is_permanent,
    long_wait,
    no_answer,
    request_note,
    retry_note,
    shown_url,
    stream_failed,
    transient_error,
    without_echo,
)

__all__ = ("api_error", "broke_off", "connection_error")

# What to do about an error status that is still there after the SDK's retries.
_ADVICE = {
    400: "fix the request (messages, tools, max_tokens for this model)",
    401: "check the API key (ANTHROPIC_API_KEY or api_key=)",
    403: "the key may not use this model or feature; check its workspace permissions",
    404: "check the model name",
    413: "the request is too large; shorten the conversation or the tool results",
}
# ... and about one that may pass when tried again (``{}``: how often it was retried).
_RETRY_ADVICE = {
    429: "rate limited{}; lower the team's concurrency or raise max_retries",
    529: "the API is overloaded{}; try again later or raise max_retries",
}

_WAITED = {429: "rate limited", 529: "the API is overloaded"}


def connection_error(
    exc: anthropic.APIConnectionError, model: str, client: anthropic.AsyncAnthropic
) -> ModelConnectionError:
    """What a call that got no answer (after the SDK's retries) says."""
    what, advice = no_answer(isinstance(exc, anthropic.APITimeoutError), exc.request)
    cause = f" ({exc.__cause__!r})" if exc.__cause__ is not None else ""
    retried = retry_note(exc.request, client.max_retries)
    return ModelConnectionError(
        f"the Anthropic API at {shown_url(client.base_url)} {what} for model {model!r}"
        f"{retried}{cause}; {advice}"
    )


def broke_off(model: str, cause: BaseException) -> ModelConnectionError:
    return stream_failed(
        ModelConnectionError(
            f"the Anthropic API's stream for model {model!r} {stream_ended(cause)}"
        )
    )


def api_error(exc: anthropic.APIStatusError, model: str, max_retries: int) -> ModelAPIError:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    detail = error if isinstance(error, dict) else {}
    error_type = detail.get("type") if isinstance(detail.get("type"), str) else None
    text = detail.get("message") if isinstance(detail.get("message"), str) else exc.message
    request_id = exc.response.headers.get("request-id") or (
        body.get("request_id") if isinstance(body.get("request_id"), str) else None
    )
    status = exc.status_code
    if status < 400:  # an `error` event inside a stream that had begun with 200
        transient = transient_error(error_type)
        return stream_failed(
            ModelAPIError(
                f"the Anthropic API sent an error mid-stream for model {model!r}: "
                f"{error_type or 'error'}: {without_echo(str(text), _sent(exc))} "
                f"({request_note(request_id)})"
                + ("" if transient else "; not retried, as it would come again"),
                error_type=error_type,
                request_id=request_id,
            ),
            transient=transient,
        )
    advice = _ADVICE.get(status)
    if status == 404 and error_type != "not_found_error":  # no Messages API answered
        advice = _elsewhere(exc.request.url.path)
    if advice is None and (status in _RETRY_ADVICE or status >= 500):
        retried = retry_note(exc.request, max_retries, exc.response.headers)
        if long_wait(exc.response.headers) is not None:  # a retry cannot come sooner
            advice = f"{_WAITED.get(status, 'the API failed')}{retried}"
        else:
            advice = _RETRY_ADVICE.get(status, "the API failed{}; try again later").format(retried)
    return ModelAPIError(
        f"the Anthropic API answered {status} {error_type or 'error'} for model {model!r}: "
        f"{without_echo(str(text), _sent(exc))} ({request_note(request_id)}); "
        f"{advice or 'see the message'}",
        status_code=status,
        error_type=error_type,
        request_id=request_id,
        permanent=is_permanent(status, error_type, str(text)),
    )


def _elsewhere(path: str) -> str:
    """What to do about a 404 that is not the Messages API's: the request went astray."""
    doubled = path.endswith("/v1/v1/messages")  # the usual slip: base_url="https://host/v1"
    return f"check base_url: no Messages API answered at {path}" + (
        " (the SDK adds /v1/messages to base_url: leave its /v1 out)" if doubled else ""
    )


def _sent(exc: anthropic.APIStatusError) -> bytes | None:
    """The body of the request the error answers (what a server may quote back)."""
    try:
        return exc.request.content
    except httpx2.RequestNotRead:  # a streamed body, not kept: nothing to look for
        return None
