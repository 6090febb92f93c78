"""Claude through the official ``anthropic`` SDK."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, final

import anthropic
import anyio
import httpx2
from anthropic import AsyncAnthropic, not_given

from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError, ModelError
from regiment.models._anthropic_errors import api_error, broke_off, connection_error
from regiment.models._anthropic_pause import (
    PAUSED,
    Paused,
    content_of,
    each_retried,
    whole_turn,
)
from regiment.models._anthropic_stream import PartIndexer
from regiment.models._anthropic_wire import (
    CallParams,
    call_params,
    not_streamed,
    response_from_message,
)
from regiment.models._api_errors import (
    long_wait,
    not_billed,
    stream_failed,
    unreadable_reply,
)
from regiment.models._credentials import NoCredentials
from regiment.models._messages import ModelRequest, ModelResponse
from regiment.models._price import Price, checked_price
from regiment.models._sdk_model import (
    SDKModel,
    check_base_url,
    check_client_options,
    check_model_id,
    not_an_event_stream,
    password_to_auth,
)
from regiment.models._settings import ModelSettings, effective_settings
from regiment.models._stream import DeltaHandler, emit_response

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ("DEFAULT_CONTINUATIONS", "AnthropicModel")

_log = logging.getLogger("regiment.models")
_WHOLE = (
    "the server at %s answered a streamed call for model %r with one whole message, read "
    "as a plain call's reply; AnthropicModel(..., stream=False) asks for that"
)

_DEFAULT_RETRIES = 2
DEFAULT_CONTINUATIONS = 5

# What the SDK raises when a stream event is not what the Messages API sends
# (bad JSON, events out of order, a block missing its fields).
_UNREADABLE = (ValueError, RuntimeError, TypeError, AttributeError, KeyError, IndexError)


# The client options (api_key, base_url, timeout, max_retries, sdk_tracing) left unset.
_NO_OPTIONS = (None, None, None, _DEFAULT_RETRIES, False)


@final
class AnthropicModel(SDKModel[AsyncAnthropic, CallParams]):
    """A Claude model served by the Anthropic Messages API.

    Either give it a ready ``AsyncAnthropic`` client, or let it build one from
    ``api_key`` (default: the ``ANTHROPIC_API_KEY`` environment variable),
    ``base_url``, ``timeout`` and ``max_retries``. A client it builds is closed
    by ``aclose()`` or on leaving ``async with``; a client you give stays yours.

    Transient failures (429, 529 overloaded, other 5xx, connection errors and
    timeouts) are retried by the SDK's own policy, which waits as the API's
    ``retry-after`` / ``retry-after-ms`` headers say, else backs off
    exponentially from 0.5 s. A reply that asks for a wait over 120 s is not
    retried (by a client built here). What is left is raised as
    ``ModelAPIError`` or ``ModelConnectionError``.

    Streaming: by default the reply is read through the SDK's streaming
    Messages API, and ``stream(request, on_delta)`` hands out its text and
    tool-call pieces as they arrive; ``stream=False`` makes plain calls.

    Prompt caching (on by default): the last tool definition, the system
    prompt and the last block of a conversation under way carry cache
    breakpoints, so the prefix a role repeats on every call (and a tool loop
    on every turn) is read from the cache at a tenth of the input price; the
    ``Usage`` of a reply counts ``cache_read_tokens`` and ``cache_write_tokens``.
    ``prompt_caching=False`` sends no breakpoints.

    Tracing: each model call gets one ``chat`` span. A client built here has the
    SDK's OpenTelemetry spans (and its ``traceparent`` header) turned off, and a
    team opens its own ``chat {model}`` span. ``sdk_tracing=True`` turns the SDK's
    spans on; then the SDK's ``anthropic.messages.create`` span is the call's
    ``chat`` span (a team opens none of its own) and it goes to the team's
    ``Telemetry`` tracer provider. For a client you give, its own ``open_telemetry``
    option decides the same way (a ``tracer_provider`` it names is kept).

    Args:
        model: the model id, e.g. ``"claude-sonnet-4-5"``.
        client: a ready client; then give none of the other client options.
        api_key: the API key; ``None`` lets the SDK find credentials.
        base_url: the API address; ``None`` means ``ANTHROPIC_BASE_URL`` or the public API.
        timeout: seconds the server may keep a request waiting (to connect, to
            answer, between two pieces of a stream; not a whole stream's length);
            ``None`` keeps the SDK default (10 minutes).
        max_retries: how often the SDK retries a transient failure.
        sdk_tracing: let the SDK emit its own span and ``traceparent`` header.
        stream: read replies as streams (``True``) or in one piece (``False``).
        settings: settings for every call of this model; a request's
            ``settings`` (its role's) win over them.
        prompt_caching: put cache breakpoints on the system prompt and tools.
        max_continuations: how often a call goes on with a turn the API paused
            (``pause_turn``) before it raises ``ModelAPIError``.
        price: what its tokens cost (``Price``, US dollars per million tokens), which
            a ``Budget(usd=...)`` needs; there is no built-in list.

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
        stream: bool = True,
        settings: ModelSettings | None = None,
        prompt_caching: bool = True,
        max_continuations: int = DEFAULT_CONTINUATIONS,
        price: Price | None = None,
    ) -> None:
        self._price = checked_price(price, "AnthropicModel")
        if max_continuations < 0:
            raise ConfigError(f"max_continuations must be 0 or more; got {max_continuations}")
        self._model = check_model_id(model, "AnthropicModel")
        self._continuations, self._stream = max_continuations, stream
        self._settings, self._prompt_caching = settings, prompt_caching
        self._owns_client = client is None
        if client is None:
            client = _build_client(api_key, base_url, timeout, max_retries, sdk_tracing=sdk_tracing)
        elif (api_key, base_url, timeout, max_retries, sdk_tracing) != _NO_OPTIONS:
            raise ConfigError(
                "AnthropicModel got a ready client and client options (api_key, base_url, "
                "timeout, max_retries, sdk_tracing); configure the client itself, or pass "
                "only the options and let AnthropicModel build it"
            )
        self._client = client
        self._traced: tuple[TracerProvider, AnthropicModel] | None = None

    @property
    def provider(self) -> str:
        """Always ``"anthropic"``."""
        return "anthropic"

    @property
    def base_url(self) -> str:
        """The API address the client sends to (``server.address`` on ``chat`` spans),
        without a password its user part holds."""
        return self._shown_url(self._client.base_url)

    @property
    def sdk_spans(self) -> bool:
        """Whether the client makes its own span per call (its ``open_telemetry`` traces)."""
        return self._client.open_telemetry["traces"]["enabled"]

    def with_tracer_provider(self, tracer_provider: TracerProvider) -> AnthropicModel:
        """This model with the SDK's spans going to ``tracer_provider`` (kept, if the
        client names its own); it shares the client, which this model still owns."""
        options = self._client.open_telemetry
        if not options["traces"]["enabled"] or "tracer_provider" in options:
            return self
        cached = self._traced
        if cached is not None and cached[0] is tracer_provider:
            return cached[1]
        client = self._client.with_options(
            open_telemetry={**options, "tracer_provider": tracer_provider}
        )
        traced = AnthropicModel(
            self._model,
            client=client,
            stream=self._stream,
            settings=self._settings,
            prompt_caching=self._prompt_caching,
            max_continuations=self._continuations,
            price=self._price,
        )
        traced._owns_client = False
        self._traced = (tracer_provider, traced)
        return traced

    def _params(self, request: ModelRequest) -> CallParams:
        settings = effective_settings(self._settings, request)
        return call_params(self._model, request, settings, prompt_caching=self._prompt_caching)

    async def _plain(self, params: CallParams) -> ModelResponse:
        return await whole_turn(
            self._plain_leg, params, None, model=self._model, most=self._continuations
        )

    async def _streamed_again(
        self, request: ModelRequest, params: CallParams, on_delta: DeltaHandler | None
    ) -> ModelResponse:
        leg = each_retried(self._streamed_leg, functools.partial(self._retried, request))
        return await whole_turn(leg, params, on_delta, model=self._model, most=self._continuations)

    async def _plain_leg(
        self, params: CallParams, on_delta: DeltaHandler | None
    ) -> tuple[ModelResponse, Paused]:
        with self._translated():
            try:
                message = await self._client.messages.create(**params)
            except ValueError as exc:  # the SDK's own check, before it sends anything
                if "Streaming is required" not in str(exc):
                    raise
                raise _needs_streaming(self._model, params["max_tokens"]) from exc
        with self._translated(reading=True, request_id=getattr(message, "_request_id", None)):
            response = response_from_message(message)
        if response.stop_reason != PAUSED:
            return response, []
        return response, [block.to_dict(mode="json") for block in message.content]

    async def _streamed_leg(
        self, params: CallParams, on_delta: DeltaHandler | None
    ) -> tuple[ModelResponse, Paused]:
        # The raw events, read into the reply by our own reader (see PartIndexer).
        with self._translated():
            stream = await self._client.messages.create(**params, stream=True)
        indexer, seen = PartIndexer(), []
        try:
            request_id = stream.response.headers.get("request-id")
            content_type = stream.response.headers.get("content-type")
            if not_an_event_stream(content_type):
                return await _not_streamed(self, stream.response, request_id, on_delta)
            while True:
                with self._translated(reading=True, request_id=request_id):
                    event = await anext(stream, None)
                    delta = indexer.delta(event) if event is not None else None
                if event is None:
                    break
                seen.append(event)  # a paused reply is sent back as it came
                if delta is not None and on_delta is not None:
                    await on_delta(delta)
            if not indexer.stopped:
                raise stream_failed(
                    ModelConnectionError(
                        f"the Anthropic API's stream for model {self._model!r} ended before "
                        "its message_stop event, so the reply is incomplete"
                    )
                )
        except ModelError as exc:  # what message_start reported is billed all the same
            if exc.usage is None:
                exc.usage = indexer.spent()
            if not indexer.started and isinstance(exc, ModelAPIError):
                not_billed(exc)  # in place of message_start: a streamed 529, not billed
            raise
        finally:
            with anyio.CancelScope(shield=True):  # release the connection even when cancelled
                await stream.close()
        response = indexer.response()
        return response, content_of(seen) if response.stop_reason == PAUSED else []

    @contextlib.contextmanager
    def _translated(
        self, *, reading: bool = False, request_id: str | None = None
    ) -> Iterator[None]:
        """Turn the SDK's and the transport's errors into ours (cancellation passes);
        ``reading``: the block reads the reply or its stream events, so bad data is
        the server's (as is a body that is not JSON at all, read inside the SDK's call)."""
        try:
            yield
        except anthropic.APIStatusError as exc:
            raise api_error(exc, self._model, self._client.max_retries) from exc
        except anthropic.APIConnectionError as exc:
            if reading:  # newer SDKs wrap a failed read of the body: the stream broke off
                raise broke_off(self._model, exc.__cause__ or exc) from exc
            raise connection_error(exc, self._model, self._client) from exc
        except anthropic.APIResponseValidationError as exc:
            raise ModelAPIError(
                f"the Anthropic API answered for model {self._model!r} with a body the SDK "
                f"could not read ({exc.message}); check base_url points at the Messages API",
                status_code=exc.status_code,
                request_id=exc.response.headers.get("request-id"),
            ) from exc
        except httpx2.TransportError as exc:  # only mid-stream: the SDK retries the rest
            raise broke_off(self._model, exc) from exc
        except _UNREADABLE as exc:
            unreadable = unreadable_reply(
                exc,
                reading=reading,
                reply=f"the Anthropic API sent a reply for model {self._model!r}",
                advice="check base_url points at the Messages API, or try again",
                request_id=request_id,
            )
            if unreadable is None:
                raise
            raise unreadable from exc

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r}, base_url={self.base_url!r})"


async def _not_streamed(
    model: AnthropicModel,
    answer: httpx2.Response,
    request_id: str | None,
    on_delta: DeltaHandler | None,
) -> tuple[ModelResponse, Paused]:
    """A streamed call answered with JSON or HTML: see ``not_streamed``."""
    with model._translated(reading=True, request_id=request_id):
        body = await answer.aread()
        message = not_streamed(answer, body, model=model._model, request_id=request_id)
        response = response_from_message(message)
    _log.info(_WHOLE, model.base_url, model._model)
    if on_delta is not None:
        await emit_response(response, on_delta)
    paused = response.stop_reason == PAUSED
    return response, [block.to_dict(mode="json") for block in message.content] if paused else []


def _needs_streaming(model: str, max_tokens: int) -> ConfigError:
    return ConfigError(
        f"AnthropicModel({model!r}, stream=False) cannot ask for max_tokens={max_tokens}: "
        "the anthropic SDK refuses a plain call that may take over 10 minutes; read replies "
        "as streams (stream=True, the default), lower the role's max_tokens, or give the "
        "model a timeout"
    )


def _build_client(
    api_key: str | None,
    base_url: str | None,
    timeout: float | None,
    max_retries: int,
    *,
    sdk_tracing: bool,
) -> AsyncAnthropic:
    check_client_options(timeout, max_retries, model="AnthropicModel")
    http_client = anthropic.DefaultAsyncHttpxClient(event_hooks={"response": [_long_wait_is_final]})
    # `not_given` keeps the SDK default; passing None would mean "never time out".
    try:
        client = AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=not_given if timeout is None else timeout,
            max_retries=max_retries,
            open_telemetry={} if sdk_tracing else False,
            http_client=http_client,
        )
    except anthropic.CredentialsError as exc:
        raise ConfigError(
            f"the Anthropic SDK could not load credentials ({exc}); set ANTHROPIC_API_KEY "
            "or pass AnthropicModel(..., api_key=...)"
        ) from exc
    if not client.api_key and not client.auth_token and client.credentials is None:  # "" too
        raise NoCredentials(
            "no Anthropic credentials found; set the ANTHROPIC_API_KEY environment "
            "variable or pass AnthropicModel(..., api_key=...)",
            env="ANTHROPIC_API_KEY",
        )
    check_base_url(client.base_url, model="AnthropicModel", env="ANTHROPIC_BASE_URL")
    password_to_auth(client, http_client)
    return client


async def _long_wait_is_final(response: httpx2.Response) -> None:
    """Tell the SDK not to retry a reply that asks for a wait longer than LONGEST_WAIT
    (a daily limit's retry-after): the SDK would sleep that long, once per retry."""
    if response.status_code >= 400 and long_wait(response.headers) is not None:
        response.headers["x-should-retry"] = "false"
