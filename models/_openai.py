"""OpenAI models, and any server that speaks the Chat Completions API, through the ``openai`` SDK."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeAlias, final

import anyio
import httpx2
import msgspec

from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.models._api_errors import (
    broke_off,
    is_permanent,
    long_wait,
    no_answer,
    request_note,
    retry_note,
    stream_failed,
    unreadable_reply,
    without_echo,
)
from regiment.models._credentials import NoCredentials

try:
    import openai
    from openai import AsyncOpenAI, not_given
except ImportError as exc:  # an optional extra
    raise ConfigError(
        "OpenAIModel needs the openai SDK, an optional extra: pip install 'regiment[openai]'"
    ) from exc

from regiment.models._messages import ModelRequest, ModelResponse
from regiment.models._openai_wire import (
    CallParams,
    ChunkReader,
    StreamErrorEvent,
    call_params,
    response_from_completion,
)
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
from regiment.models._stream import DeltaHandler

if TYPE_CHECKING:
    from openai import AsyncStream
    from openai._response import AsyncAPIResponse, AsyncResponseContextManager
    from openai.types.chat import ChatCompletionChunk

    _Opened: TypeAlias = AsyncAPIResponse[AsyncStream[ChatCompletionChunk]]

__all__ = ("OpenAIModel",)

_log = logging.getLogger("regiment.models")

_DEFAULT_RETRIES = 2
# A key for servers that want none (Ollama, a local vLLM); the SDK insists on one.
_NO_KEY = "unused"
# What the SDK or our reader raises on a chunk that is not what the API sends.
_UNREADABLE = (
    msgspec.DecodeError,
    ValueError,
    TypeError,
    AttributeError,
    LookupError,
    RecursionError,
)

_ADVICE = {
    400: "fix the request (messages, tools, settings for this model)",
    401: "check the API key (OPENAI_API_KEY or api_key=)",
    403: "the key may not use this model; check the project's permissions",
    404: "check the model name and base_url",
    413: "the request is too large; shorten the conversation or the tool results",
}
# Azure serves a deployment at <endpoint>/openai/deployments/<model>/...: no /v1 in it.
_AZURE_ADVICE = {
    401: "check the Azure OpenAI client's api_key (AZURE_OPENAI_API_KEY) or its token provider",
    404: "check the deployment name (OpenAIModel's model), the client's azure_endpoint "
    "and its api_version",
}
_RATE_LIMITED = "rate limited{}; lower the team's concurrency or raise max_retries"


@final
class OpenAIModel(SDKModel[AsyncOpenAI, CallParams]):
    """A model behind the Chat Completions API: OpenAI's, or any compatible server.

    ``OpenAIModel("gpt-4.1")`` talks to OpenAI with ``OPENAI_API_KEY``;
    ``OpenAIModel("llama3.1", base_url="http://localhost:11434/v1",
    compatible=True)`` talks to Ollama, vLLM, LM Studio or any other server
    that speaks Chat Completions (no key needed unless the server wants one).
    Tool calls, streaming (``stream=False`` for plain calls), usage (cached
    prompt tokens as ``cache_read_tokens``) and settings work as for Claude.
    Transient failures (429, 5xx, connection errors, timeouts) are retried by
    the SDK's policy; what is left raises ``ModelAPIError`` or ``ModelConnectionError``.

    Args:
        model: the model id, e.g. ``"gpt-4.1"``.
        client: a ready ``AsyncOpenAI`` client; then give none of the client options.
        api_key: the API key; ``None`` reads ``OPENAI_API_KEY``.
        base_url: the server's address; ``None`` means ``OPENAI_BASE_URL`` or OpenAI.
        timeout: seconds the server may keep a request waiting (to connect, to
            answer, between two pieces of a stream; not a whole stream's length);
            ``None`` keeps the SDK default.
        max_retries: how often the SDK retries a transient failure.
        stream: read replies as streams (``True``) or in one piece (``False``).
        settings: settings for every call; a request's ``settings`` win over them.
        compatible: the server is not OpenAI's: send ``max_tokens`` rather than
            ``max_completion_tokens``, and need no API key.
        price: what its tokens cost (``Price``, US dollars per million tokens), which
            a ``Budget(usd=...)`` needs; there is no built-in list.

    Raises:
        regiment.errors.ConfigError: both a client and client options were
            given, or no key was found for OpenAI itself.
    """

    _usage_hint = "; a server that can report usage in streams needs stream_options.include_usage"

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int = _DEFAULT_RETRIES,
        stream: bool = True,
        settings: ModelSettings | None = None,
        compatible: bool = False,
        price: Price | None = None,
    ) -> None:
        self._price = checked_price(price, "OpenAIModel")
        self._model = check_model_id(model, "OpenAIModel")
        self._stream, self._settings, self._compatible = stream, settings, compatible
        self._usage_asked = True  # streams ask for their usage (until a server refuses)
        self._warned_thinking = False  # told once that thinking_budget is not sent
        self._owns_client = client is None
        if client is None:
            client = _build_client(api_key, base_url, timeout, max_retries, compatible)
        elif (api_key, base_url, timeout, max_retries) != (None, None, None, _DEFAULT_RETRIES):
            raise ConfigError(
                "OpenAIModel got a ready client and client options (api_key, base_url, "
                "timeout, max_retries); configure the client itself, or pass only the options"
            )
        self._client = client

    @property
    def provider(self) -> str:
        """Always ``"openai"`` (OpenTelemetry's name for the Chat Completions API)."""
        return "openai"

    @property
    def base_url(self) -> str:
        """The API address the client sends to (``server.address`` on ``chat`` spans),
        without a password its user part holds."""
        return self._shown_url(self._client.base_url)

    def _params(self, request: ModelRequest) -> CallParams:
        settings = effective_settings(self._settings, request)
        if settings.thinking_budget is not None and not self._warned_thinking:
            self._warned_thinking = True  # once per model: a team's settings reach every role
            _log.warning(
                "model %r (Chat Completions at %s) does not send thinking_budget, which is "
                "Claude's extended thinking; for a reasoning model give "
                "extra={'reasoning_effort': 'low' | 'medium' | 'high'} in its settings",
                self._model,
                self.base_url,
            )
        return call_params(self._model, request, settings, compatible=self._compatible)

    async def _plain(self, params: CallParams) -> ModelResponse:
        with self._translated():
            completion = await self._client.chat.completions.create(**params)
        request_id = getattr(completion, "_request_id", None)
        # A gateway whose upstream failed; no "choices" at all is "could not be read", below.
        if getattr(completion, "choices", None) == []:
            raise self._no_choices('a reply with no choices ("choices": []', request_id)
        with self._translated(reading=True, request_id=request_id):
            return response_from_completion(completion)

    async def _streamed(self, params: CallParams, on_delta: DeltaHandler | None) -> ModelResponse:
        # The raw event stream, read by our own lenient reader to its very end (the
        # SDK's chunk stream stops reading at [DONE], which trio warns about).
        with self._translated():
            manager, response = await self._opened(params)
        try:
            request_id = response.headers.get("x-request-id")
            sent = response.http_request.content  # what an error event may quote back
            content_type = response.headers.get("content-type")
            if not_an_event_stream(content_type):
                raise ModelAPIError(
                    f"the Chat Completions API at {self._where()} answered with {content_type}, "
                    f"not an event stream ({request_note(request_id)}); check base_url points at "
                    "a Chat Completions server",
                    status_code=response.status_code,
                    request_id=request_id,
                )
            reader = ChunkReader()
            lines = response.iter_lines()
            while True:
                with self._translated(reading=True, request_id=request_id, sent=sent):
                    line = await anext(lines, None)
                    deltas = reader.line(line) if line is not None else []
                if line is None:
                    break
                for delta in deltas:
                    if on_delta is not None:
                        await on_delta(delta)
        finally:
            with anyio.CancelScope(shield=True):  # release the connection even when cancelled
                await manager.__aexit__(None, None, None)
        if not reader.chose:  # as _plain's: not "ended before its finish_reason", retried
            raise self._no_choices('a stream with no choices (all "choices": []', request_id)
        if reader.stop_reason is None:
            raise stream_failed(
                ModelConnectionError(
                    f"the stream from {self._where()} ended before its finish_reason, so the "
                    "reply is incomplete"
                )
            )
        return reader.response()

    async def _opened(
        self, params: CallParams
    ) -> tuple[AsyncResponseContextManager[_Opened], _Opened]:
        """The stream, asked to end with its usage; a server that refuses the
        ``stream_options`` that asks (Mistral's 422, Azure's 400) is asked without, from
        then on (its usage is estimated, see ``SDKModel._counted``)."""
        create = self._client.chat.completions.with_streaming_response.create
        if self._usage_asked:
            manager = create(**params, stream=True, stream_options={"include_usage": True})
            try:
                return manager, await manager.__aenter__()
            except openai.APIStatusError as exc:
                said = f"{exc.message} {exc.body}"
                if exc.status_code not in (400, 422) or "stream_options" not in said:
                    raise
            self._usage_asked = False
            _log.warning(
                "the server at %s refused stream_options.include_usage for model %r; its "
                "streams are asked for without it, so their usage is estimated",
                self.base_url,
                self._model,
            )
        manager = create(**params, stream=True)
        return manager, await manager.__aenter__()

    def _no_choices(self, sent: str, request_id: str | None) -> ModelAPIError:
        error = ModelAPIError(
            f"the Chat Completions API at {self._where()} sent {sent}, "
            f"{request_note(request_id)}): the server gave no answer; see its logs, or try again",
            request_id=request_id,
        )
        return stream_failed(error, transient=False)

    def _where(self) -> str:
        return f"{self.base_url} for model {self._model!r}"

    @contextlib.contextmanager
    def _translated(
        self, *, reading: bool = False, request_id: str | None = None, sent: bytes | None = None
    ) -> Iterator[None]:
        """Turn the SDK's and the transport's errors into ours (cancellation passes);
        ``reading``: the block reads the reply or its stream events, so bad data is
        the server's (as is a body that is not JSON at all, read inside the SDK's call)."""
        try:
            yield
        except openai.APIStatusError as exc:
            raise _api_error(exc, self._where(), self._client.max_retries) from exc
        except openai.APIConnectionError as exc:
            what, advice = no_answer(isinstance(exc, openai.APITimeoutError), exc.request)
            retried = retry_note(exc.request, self._client.max_retries)
            raise ModelConnectionError(
                f"the Chat Completions API at {self._where()} {what}{retried} "
                f"({exc.__cause__!r}); {advice}"
            ) from exc
        except StreamErrorEvent as exc:
            error = ModelAPIError(
                f"the Chat Completions API at {self._where()} sent an error mid-stream: "
                f"{exc.error_type or 'error'}: {without_echo(str(exc), sent)} "
                f"({request_note(request_id)})"
                + ("" if exc.transient else "; not retried, as it would come again"),
                error_type=exc.error_type,
                request_id=request_id,
            )
            raise stream_failed(error, transient=exc.transient) from exc
        except httpx2.TransportError as exc:  # only mid-stream: the SDK retries the rest
            raise stream_failed(
                ModelConnectionError(f"the stream from {self._where()} {broke_off(exc)}")
            ) from exc
        except _UNREADABLE as exc:
            unreadable = unreadable_reply(
                exc,
                reading=reading,
                reply=f"the Chat Completions API at {self._where()} sent a reply",
                advice="check base_url points at a Chat Completions server",
                request_id=request_id,
            )
            if unreadable is None:
                raise
            raise unreadable from exc

    def __repr__(self) -> str:
        return f"OpenAIModel({self._model!r}, base_url={self.base_url!r})"


def _build_client(
    api_key: str | None, base_url: str | None, timeout: float | None, retries: int, compatible: bool
) -> AsyncOpenAI:
    check_client_options(timeout, retries, model="OpenAIModel")
    key = api_key or os.environ.get("OPENAI_API_KEY") or (_NO_KEY if compatible else None)
    if key is None:
        raise NoCredentials(
            "no OpenAI API key found; set the OPENAI_API_KEY environment variable or pass "
            "OpenAIModel(..., api_key=...) (a local server needs compatible=True, and no key)",
            env="OPENAI_API_KEY",
        )
    http_client = openai.DefaultAsyncHttpxClient(event_hooks={"response": [_quota_is_final]})
    client = AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        timeout=not_given if timeout is None else timeout,
        max_retries=retries,
        http_client=http_client,
    )
    check_base_url(client.base_url, model="OpenAIModel", env="OPENAI_BASE_URL")
    password_to_auth(client, http_client)
    return client


async def _quota_is_final(response: httpx2.Response) -> None:
    """Tell the SDK not to retry a 429 that says the account's quota is used up: every
    retry would get the same answer, after a back-off of seconds."""
    if response.status_code != 429:
        return
    await response.aread()
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):  # not JSON, or not an object: a rate limit's text
        return
    if isinstance(error, dict) and error.get("code") == "insufficient_quota":
        response.headers["x-should-retry"] = "false"


def _api_error(exc: openai.APIStatusError, where: str, max_retries: int) -> ModelAPIError:
    status, request_id = exc.status_code, exc.request_id
    text, body = exc.message, exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        text = body["message"]
    advice, path = _ADVICE.get(status), exc.request.url.path
    if "/openai/deployments/" in path:  # Azure OpenAI (a ready AsyncAzureOpenAI client)
        advice = _AZURE_ADVICE.get(status, advice)
    elif status == 404 and "/v1/" not in path:  # the usual slip: base_url="http://host:11434"
        advice = (
            f"check the model name and base_url: the request went to {path}, without the "
            "/v1 most Chat Completions servers serve under; try base_url ending in /v1"
        )
    if exc.code == "insufficient_quota":  # a 429 that no retry can help
        advice = "the account's quota is used up; check its plan and billing"
    elif advice is None and (status == 429 or status >= 500):
        retried = retry_note(exc.request, max_retries, exc.response.headers)
        if long_wait(exc.response.headers) is not None:  # a retry cannot come sooner
            advice = f"{'rate limited' if status == 429 else 'the server failed'}{retried}"
        else:
            advice = (
                _RATE_LIMITED if status == 429 else "the server failed{}; try again later"
            ).format(retried)
    return ModelAPIError(
        f"the Chat Completions API at {where} answered {status} {exc.type or 'error'}: "
        f"{without_echo(text, _sent(exc))} ({request_note(request_id)}); "
        f"{advice or 'see the message'}",
        status_code=status,
        error_type=exc.type,
        request_id=request_id,
        permanent=is_permanent(status, exc.code, text),
    )


def _sent(exc: openai.APIStatusError) -> bytes | None:
    """The body of the request the error answers (what a server may quote back)."""
    try:
        return exc.request.content
    except httpx2.RequestNotRead:  # a streamed body, not kept: nothing to look for
        return None
