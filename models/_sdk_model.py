"""What the SDK-backed providers share: the call flow, settings, and closing the client."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Protocol, Self, TypeAlias, TypeVar

import anyio
import httpx2
import msgspec

from regiment.errors import ConfigError, ModelError
from regiment.models._api_errors import (
    backoff,
    failed_mid_stream,
    shown_url,
    transient_stream_failure,
)
from regiment.models._call_ids import distinct_call_ids
from regiment.models._estimate import estimate_tokens
from regiment.models._messages import ModelRequest, ModelResponse, Usage
from regiment.models._price import Price
from regiment.models._settings import ModelSettings
from regiment.models._stream import DeltaHandler, PartDelta, StreamRestart, emit_response

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = (
    "SDKModel",
    "check_base_url",
    "check_client_options",
    "check_model_id",
    "not_an_event_stream",
    "password_to_auth",
)

_log = logging.getLogger("regiment.models")
_NO_USAGE = Usage()


def _noted(exc: ModelError, note: str) -> None:
    exc.args = (f"{exc.args[0] if exc.args else ''}{note}", *exc.args[1:])


def _tries(retries: int) -> str:
    if retries == 0:
        return "not retried (max_retries=0); try the call again"
    return f"the call was made {retries + 1} times (max_retries={retries}); try again later"


def _retry_of(retry: int, retries: int) -> str:
    return f"retry {retry + 1} of {retries}"


def not_an_event_stream(content_type: str | None) -> bool:
    """Whether a streamed call's answer is plainly no event stream: a JSON or HTML
    body (an error page, a server that ignored ``stream``, a wrong ``base_url``).
    Other types are read as events, for servers that label their stream loosely."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind in ("application/json", "text/html")


def check_client_options(timeout: float | None, max_retries: int, *, model: str) -> None:
    """Refuse a timeout or retry count no call could work with: the SDKs took a timeout
    of 0 or less (every call then "did not answer in time"), and a negative
    ``max_retries`` failed inside the call."""
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise ConfigError(
            f"{model}: timeout must be a finite number of seconds > 0, or None for the SDK's "
            f"default; got {timeout}"
        )
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(
            f"{model}: max_retries must be a whole number >= 0 (0: no retries); got {max_retries!r}"
        )


def check_model_id(model: object, owner: str) -> str:
    """``model``, if it can name a model: a blank id (``""``, from an unset variable, say)
    or one with spaces around it would fail every call with the API's 400 or 404."""
    if not isinstance(model, str) or not model.strip() or model != model.strip():
        raise ConfigError(
            f"{owner}: the model id {model!r} names no model; give the provider's id for it, "
            f"e.g. {owner}({'claude-sonnet-4-5' if owner == 'AnthropicModel' else 'gpt-4.1'!r})"
        )
    return model


def check_base_url(url: httpx2.URL, *, model: str, env: str) -> None:
    """Refuse a base URL that is no web address (``localhost:11434/v1``, without its
    ``http://``): the SDK would take it, and every call would fail to connect."""
    if url.scheme in ("http", "https") and url.host:
        return
    raise ConfigError(
        f"{model}: base_url {shown_url(url).rstrip('/')!r} (from base_url= or {env}) is not an "
        "http:// or https:// address; write it whole, e.g. 'http://localhost:11434/v1'"
    )


class _SDKClient(Protocol):
    @property
    def base_url(self) -> httpx2.URL: ...

    @base_url.setter
    def base_url(self, url: httpx2.URL | str) -> None: ...


def password_to_auth(client: _SDKClient, http_client: httpx2.AsyncClient) -> None:
    """Take a password out of ``client``'s base URL (``http://ann:pw@host/v1``): the SDK
    builds every request's URL from it, and the HTTP client's INFO line (``HTTP Request:
    POST http://ann:pw@host/v1/...``) and the SDK's debug lines show that URL. The HTTP
    client sends it as Basic auth instead, the ``Authorization`` header it built from the
    URL before; the URL keeps the user part."""
    url = client.base_url
    if not url.password:
        return
    http_client.auth = httpx2.BasicAuth(url.username, url.password)
    client.base_url = url.copy_with(userinfo=url.userinfo.partition(b":")[0])


class _Closable(Protocol):
    @property
    def max_retries(self) -> int: ...

    async def close(self) -> None: ...


class _Handed:
    """Passes a stream's pieces on to its handler, noting whether any was handed out."""

    __slots__ = ("any", "on_delta")

    def __init__(self, on_delta: DeltaHandler) -> None:
        self.on_delta, self.any = on_delta, False

    async def __call__(self, delta: PartDelta) -> None:
        self.any = True
        await self.on_delta(delta)


Attempt: TypeAlias = Callable[[DeltaHandler | None], Awaitable[ModelResponse]]
"""One streamed request of a call, its pieces going to the handler it is given."""

ClientT = TypeVar("ClientT", bound=_Closable)
ParamsT = TypeVar("ParamsT")


class SDKModel(Generic[ClientT, ParamsT]):
    """A provider over an official SDK client; subclasses build the wire calls.

    A subclass sets ``_model``, ``_stream``, ``_settings``, ``_client`` and
    ``_owns_client`` and implements ``_params``, ``_plain`` and ``_streamed`` (or
    ``_streamed_again``, for a call made of several requests, each retried on its own).
    """

    _model: str
    _stream: bool
    _settings: ModelSettings | None
    _client: ClientT
    _owns_client: bool
    _warned_usage: bool = False  # told once per model that its server reports no usage
    _price: Price | None = None

    @property
    def price(self) -> Price | None:
        """What its tokens cost (the user's ``Price``; ``None``: not given)."""
        return self._price

    @property
    def name(self) -> str:
        """The model id."""
        return self._model

    @property
    def client(self) -> ClientT:
        """The SDK client in use."""
        return self._client

    _shown: tuple[object, str] = (None, "")  # the client's base_url, and it as shown

    def _shown_url(self, url: object) -> str:
        """``url`` (the client's ``base_url``) as ``shown_url`` shows it, made again only for
        another URL object (the SDK makes one when ``base_url`` is set anew): a traced call
        reads ``base_url`` every time (issue #22)."""
        if url is not self._shown[0]:
            self._shown = (url, shown_url(url))
        return self._shown[1]

    @property
    def sdk_spans(self) -> bool:
        """Whether the SDK client makes its own ``chat`` span for each call.

        When it does, that span is the call's one ``chat`` span: a team opens
        none of its own around it (see ``with_tracer_provider``).
        """
        return False

    def with_tracer_provider(self, tracer_provider: TracerProvider) -> Self:
        """This model with the SDK's spans going to ``tracer_provider``.

        A client that names its own provider keeps it. The result shares the
        client (and is cached, so asking again is cheap); closing stays with this model.
        """
        return self

    @property
    def settings(self) -> ModelSettings | None:
        """The settings this model applies to every call (a request's own win)."""
        return self._settings

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the reply (read as a stream unless ``stream=False``).

        Raises:
            regiment.errors.ModelAPIError: an error status after retries, or a reply
                that could not be read.
            regiment.errors.ModelConnectionError: the server could not be reached,
                did not answer in time, or the stream broke off.
            regiment.errors.ConfigError: the settings contradict each other.
        """
        params = self._params(request)
        if self._stream:
            return await self._streamed_again(request, params, None)
        return self._counted(request, await self._plain(params))

    async def stream(self, request: ModelRequest, on_delta: DeltaHandler) -> ModelResponse:
        """As ``complete``, awaiting ``on_delta`` with each piece of the reply as it arrives.

        With ``stream=False`` the reply comes in one piece and its parts are
        handed to ``on_delta`` whole. A stream that fails (breaks off, or sends an
        overload or server error event) is made again, up to the client's
        ``max_retries``; if some of its pieces had reached ``on_delta``, a
        ``StreamRestart`` tells it first that they are void (the retry hands them out
        again). The last failure raises ``ModelConnectionError`` or ``ModelAPIError``.
        """
        params = self._params(request)
        if self._stream:
            return await self._streamed_again(request, params, on_delta)
        response = self._counted(request, await self._plain(params))
        await emit_response(response, on_delta)
        return response

    async def _streamed_again(
        self, request: ModelRequest, params: ParamsT, on_delta: DeltaHandler | None
    ) -> ModelResponse:
        """The streamed call, made again as ``_retried`` says."""
        return await self._retried(request, functools.partial(self._streamed, params), on_delta)

    async def _retried(
        self, request: ModelRequest, attempt: Attempt, on_delta: DeltaHandler | None
    ) -> ModelResponse:
        """``attempt`` (one streamed request), made again as the SDK retries an overloaded
        call when its stream failed transiently; a handler that was handed some of its
        pieces is told first (``StreamRestart``) they are void. The tokens of failed
        attempts are charged: to the reply's usage, or the error's."""
        handed = None if on_delta is None else _Handed(on_delta)
        spent, estimated, retries = _NO_USAGE, False, self._client.max_retries
        for retry in range(retries + 1):
            try:
                response = await attempt(handed)
            except ModelError as exc:
                usage, guessed = self._failed_usage(request, exc)
                spent, estimated = spent + usage, estimated or guessed
                exc.usage = spent if spent != _NO_USAGE else exc.usage
                exc.usage_estimated = estimated
                if not transient_stream_failure(exc):
                    raise
                if retry == retries:
                    _noted(exc, f"; {_tries(retries)}")
                    raise
                wait = backoff(retry)
                _log.info(
                    "%s; retrying the call in %.2f s (%s)", exc, wait, _retry_of(retry, retries)
                )
                if handed is not None and handed.any:  # its pieces so far are void
                    handed.any = False
                    await handed.on_delta(StreamRestart(index=0, error=str(exc)))
                await anyio.sleep(wait)
                continue
            response = self._counted(request, response)  # before the failed attempts' usage
            if spent == _NO_USAGE:
                return response
            return msgspec.structs.replace(
                response,
                usage=response.usage + spent,
                usage_estimated=response.usage_estimated or estimated,
            )
        raise AssertionError("unreachable")

    def _failed_usage(self, request: ModelRequest, exc: ModelError) -> tuple[Usage, bool]:
        """What a failed attempt spent, and whether that is an estimate: the usage its
        stream reported, else (a stream that began and broke before it said) an
        estimate of its input tokens."""
        if exc.usage is not None:
            return exc.usage, False
        if not failed_mid_stream(exc):
            return _NO_USAGE, False  # refused before a stream began: nothing was read
        _log.warning(
            "the stream from %s for model %r failed before it reported the call's token "
            "usage, so its usage is unknown; the step's or run's usage and budget are charged "
            "an estimate of its input tokens (estimate_tokens)",
            getattr(self, "base_url", "?"),
            self._model,
        )
        return Usage(input_tokens=estimate_tokens(request)), True

    # What the warning about a reply with no usage adds (Chat Completions' stream option).
    _usage_hint = ""

    def _counted(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """``response``, with an estimated usage if the server reported none (some
        compatible servers and proxies do not, in a stream or at all), so token budgets
        still hold. Every request has input, so a usage with none of it (a stream's
        ``message_start`` without usage, then a ``message_delta`` with output tokens)
        reported none: its input is estimated, what it did report is kept. Its tool calls
        get ids of their own (``distinct_call_ids``): a reply's calls go back by id."""
        response = distinct_call_ids(response, self._model)
        usage = response.usage
        if usage.input_tokens or usage.cache_read_tokens or usage.cache_write_tokens:
            return response
        if not self._warned_usage:
            self._warned_usage = True
            _log.warning(
                "the server at %s reported no token usage for model %r; budgets count an "
                "estimate instead (estimate_tokens)%s",
                getattr(self, "base_url", "?"),
                self._model,
                self._usage_hint,
            )
        usage = Usage(
            input_tokens=estimate_tokens(request),
            output_tokens=usage.output_tokens or estimate_tokens(response),
        )
        return msgspec.structs.replace(response, usage=usage, usage_estimated=True)

    def _params(self, request: ModelRequest) -> ParamsT:
        raise NotImplementedError

    async def _plain(self, params: ParamsT) -> ModelResponse:
        raise NotImplementedError

    async def _streamed(self, params: ParamsT, on_delta: DeltaHandler | None) -> ModelResponse:
        raise NotImplementedError

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
