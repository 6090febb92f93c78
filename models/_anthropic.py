"""Claude through the official ``anthropic`` SDK."""

from __future__ import annotations

from types import TracebackType
from typing import Self, final

import anthropic
from anthropic import AsyncAnthropic, not_given, omit

from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.models._anthropic_wire import (
    message_params,
    response_from_message,
    tool_choice_param,
    tool_params,
)
from regiment.models._messages import ModelRequest, ModelResponse

__all__ = ("AnthropicModel",)

_DEFAULT_RETRIES = 2

# What to do about an error status that is still there after the SDK's retries.
_ADVICE = {
    400: "fix the request (messages, tools, max_tokens for this model)",
    401: "check the API key (ANTHROPIC_API_KEY or api_key=)",
    403: "the key may not use this model or feature; check its workspace permissions",
    404: "check the model name",
    413: "the request is too large; shorten the conversation or the tool results",
    429: "rate limited even after retries; lower the team's concurrency or raise max_retries",
    529: "the API is overloaded even after retries; try again later or raise max_retries",
}


@final
class AnthropicModel:
    """A Claude model served by the Anthropic Messages API.

    Either give it a ready ``AsyncAnthropic`` client, or let it build one from
    ``api_key`` (default: the ``ANTHROPIC_API_KEY`` environment variable),
    ``base_url``, ``timeout`` and ``max_retries``. A client it builds is closed
    by ``aclose()`` or on leaving ``async with``; a client you give stays yours.

    Transient failures (429, 529 overloaded, other 5xx, connection errors and
    timeouts) are retried by the SDK's own policy, which waits as the API's
    ``retry-after`` / ``retry-after-ms`` headers say, else backs off
    exponentially from 0.5 s. What is left is raised as ``ModelAPIError`` or
    ``ModelConnectionError``.

    Tracing: regiment's own ``chat {model}`` span is the one span per model
    call, so a client built here has the SDK's OpenTelemetry spans (and its
    ``traceparent`` header) turned off. ``sdk_tracing=True`` turns them back on;
    the SDK's ``anthropic.messages.create`` span then nests under the current
    span. For a client you give, its own ``open_telemetry`` option decides.

    Args:
        model: the model id, e.g. ``"claude-sonnet-4-5"``.
        client: a ready client; then give none of the other client options.
        api_key: the API key; ``None`` lets the SDK find credentials.
        base_url: the API address; ``None`` means ``ANTHROPIC_BASE_URL`` or the public API.
        timeout: seconds per HTTP request; ``None`` keeps the SDK default (10 minutes).
        max_retries: how often the SDK retries a transient failure.
        sdk_tracing: let the SDK emit its own span and ``traceparent`` header.

    Raises:
        regiment.errors.ConfigError: both a client and client options were
            given, or no credentials could be found.
    """

    def __init__(
        self,
        model: str,
        *,
        client: AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int = _DEFAULT_RETRIES,
        sdk_tracing: bool = False,
    ) -> None:
        self._model = model
        self._owns_client = client is None
        if client is None:
            client = _build_client(api_key, base_url, timeout, max_retries, sdk_tracing=sdk_tracing)
        elif (api_key, base_url, timeout, max_retries, sdk_tracing) != (
            None,
            None,
            None,
            _DEFAULT_RETRIES,
            False,
        ):
            raise ConfigError(
                "AnthropicModel got a ready client and client options (api_key, base_url, "
                "timeout, max_retries, sdk_tracing); configure the client itself, or pass "
                "only the options and let AnthropicModel build it"
            )
        self._client = client

    @property
    def name(self) -> str:
        """The model id."""
        return self._model

    @property
    def provider(self) -> str:
        """Always ``"anthropic"``."""
        return "anthropic"

    @property
    def client(self) -> AsyncAnthropic:
        """The SDK client in use."""
        return self._client

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` to the Messages API and return the reply.

        Raises:
            regiment.errors.ModelAPIError: the API answered with an error status
                (after retries, for transient ones).
            regiment.errors.ModelConnectionError: the API could not be reached
                or did not answer in time, after retries.
        """
        try:
            message = await self._client.messages.create(
                model=self._model,
                max_tokens=request.max_tokens,
                messages=message_params(request),
                system=request.system or omit,
                tools=tool_params(request.tools) if request.tools else omit,
                tool_choice=tool_choice_param(request.tool_choice) if request.tool_choice else omit,
                extra_body=_extra_body(request),
                stop_sequences=list(request.stop_sequences) if request.stop_sequences else omit,
            )
        except anthropic.APIStatusError as exc:
            raise _api_error(exc, self._model) from exc
        except anthropic.APIConnectionError as exc:
            raise self._connection_error(exc) from exc
        except anthropic.APIResponseValidationError as exc:
            raise ModelAPIError(
                f"the Anthropic API answered for model {self._model!r} with a body the SDK "
                f"could not read ({exc.message}); check base_url points at the Messages API",
                status_code=exc.status_code,
                request_id=exc.response.headers.get("request-id"),
            ) from exc
        return response_from_message(message)

    async def aclose(self) -> None:
        """Close the client, if this model built it."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r}, base_url={str(self._client.base_url)!r})"

    def _connection_error(self, exc: anthropic.APIConnectionError) -> ModelConnectionError:
        what = (
            "did not answer in time"
            if isinstance(exc, anthropic.APITimeoutError)
            else ("could not be reached")
        )
        cause = f" ({exc.__cause__!r})" if exc.__cause__ is not None else ""
        return ModelConnectionError(
            f"the Anthropic API at {self._client.base_url} {what} for model {self._model!r} "
            f"after {self._client.max_retries} retries{cause}; check the network and "
            "base_url, or raise timeout / max_retries"
        )


def _extra_body(request: ModelRequest) -> dict[str, object] | None:
    # SDK 2.x has no `temperature` argument any more; the request body still carries it.
    return None if request.temperature is None else {"temperature": request.temperature}


def _build_client(
    api_key: str | None,
    base_url: str | None,
    timeout: float | None,
    max_retries: int,
    *,
    sdk_tracing: bool,
) -> AsyncAnthropic:
    # `not_given` keeps the SDK default; passing None would mean "never time out".
    try:
        client = AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=not_given if timeout is None else timeout,
            max_retries=max_retries,
            open_telemetry={} if sdk_tracing else False,
        )
    except anthropic.CredentialsError as exc:
        raise ConfigError(
            f"the Anthropic SDK could not load credentials ({exc}); set ANTHROPIC_API_KEY "
            "or pass AnthropicModel(..., api_key=...)"
        ) from exc
    if client.api_key is None and client.auth_token is None and client.credentials is None:
        raise ConfigError(
            "no Anthropic credentials found; set the ANTHROPIC_API_KEY environment "
            "variable or pass AnthropicModel(..., api_key=...)"
        )
    return client


def _api_error(exc: anthropic.APIStatusError, model: str) -> ModelAPIError:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    detail = error if isinstance(error, dict) else {}
    error_type = detail.get("type") if isinstance(detail.get("type"), str) else None
    text = detail.get("message") if isinstance(detail.get("message"), str) else exc.message
    request_id = exc.response.headers.get("request-id") or (
        body.get("request_id") if isinstance(body.get("request_id"), str) else None
    )
    status = exc.status_code
    advice = _ADVICE.get(status) or (
        "the API failed even after retries; try again later" if status >= 500 else "see the message"
    )
    return ModelAPIError(
        f"the Anthropic API answered {status} {error_type or 'error'} for model {model!r}: "
        f"{text} (request id {request_id}); {advice}",
        status_code=status,
        error_type=error_type,
        request_id=request_id,
    )
