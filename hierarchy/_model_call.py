"""One place where the hierarchy calls a model, so every call is traced alike."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, assert_never, final

import msgspec
from opentelemetry.util.types import AttributeValue

from regiment._stray import stray, stray_reason
from regiment.errors import ModelError, ModelRefused
from regiment.hierarchy._raised_by import described, name_model, raised_class
from regiment.hierarchy._span_inputs import server as _server
from regiment.hierarchy._span_inputs import tuning as _tuning
from regiment.hierarchy._text import valid_response
from regiment.models import (
    STOPPED_EARLY,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Part,
    Price,
    SelfTracingModel,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    effective_settings,
    priced,
)
from regiment.telemetry import RunMetrics, Telemetry, error_type, genai
from regiment.telemetry import semconv as sc

if TYPE_CHECKING:
    from regiment.hierarchy._live_events import LiveSink

__all__ = ("ModelCaller", "described", "input_messages", "output_messages", "raised_class")

_log = logging.getLogger("regiment.models")


# What a reply cut short ran into, and what the operator can do about it.
_MAX_TOKENS = ("its length limit", "raise max_tokens in this role's settings")
_LEAST_THINKING = 1024  # Claude's least thinking budget; max_tokens must be above it
_HELD = (
    "what a step's share (or the run) had left of Budget.output_tokens, Budget.tokens or "
    "Budget.usd: "
    "give the run a larger budget, or fewer steps at once (Team.concurrency)"
)
_CUT_ADVICE = {
    # Claude: the request and the reply filled the model's context window; no
    # max_tokens gives the reply more room than the window has left.
    "model_context_window_exceeded": (
        "the model's context window",
        "send this role less (fewer or shorter tool results, a smaller step, compression) "
        "or give it a model with a larger context window",
    ),
}


@final
@dataclass(frozen=True, slots=True)
class ModelCaller:
    """Calls ``model`` on behalf of ``agent`` (a role or worker name), inside a
    ``chat {model}`` span that is a child of whatever span is current."""

    model: Model
    agent: str
    telemetry: Telemetry
    settings: ModelSettings | None = None  # the role's, already merged over the team's
    # its model's (``Price``), if any; given: the price for a model that has none (a Ray
    # replica's, built there, charged at the price the team's process checked)
    price: Price | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        price = getattr(self.model, "price", None)  # looked up once, not per call
        if isinstance(price, Price) or self.price is None:
            object.__setattr__(self, "price", price if isinstance(price, Price) else None)

    async def call(self, request: ModelRequest, live: LiveSink | None = None) -> ModelResponse:
        """One model call; the reply's text is made encodable (see :mod:`regiment.hierarchy._text`).

        With ``live`` (a streamed run) its text goes there as ``TextDelta`` s as it comes.
        """
        settings = self.settings
        if settings is not None:
            request = msgspec.structs.replace(request, settings=settings.merge(request.settings))
        telemetry = self.telemetry
        metrics = telemetry.metrics
        if metrics is None:
            if live is None and not telemetry.traced:  # the plain call: nothing around it
                try:
                    reply = await self.model.complete(request)
                except BaseException as exc:  # a cancellation or an interrupt, as a rule
                    self.failed(exc)
                    raise
                return self.answered(reply, request)
            return await self.traced(request, live)
        return await self._measured(request, live, metrics)

    def answered(self, reply: ModelResponse, request: ModelRequest) -> ModelResponse:
        """The model's ``reply`` to ``request``: priced, made encodable, checked. With no
        settings, metrics or span (``call``'s plain call), a caller may await the model
        itself and hand its reply here (no coroutine between, #22), and what it raised to
        ``failed``.

        Raises:
            ModelRefused: the reply is a refusal (nothing a run may act on).
        """
        if (price := self.price) is not None:
            reply = _priced(reply, price)
        # The usual reply, one ASCII text, has nothing to clean: valid_response's first
        # test, spelled out here (a call fewer a model call, #22).
        parts = reply.parts if type(reply) is ModelResponse else ()  # () for a stray value
        if len(parts) != 1 or type(parts[0]) is not TextPart or not parts[0].text.isascii():
            reply = valid_response(reply, self.model)
        if reply.stop_reason in STOPPED_EARLY:  # one look-up for the usual reply
            self._stopped_early(reply, request)
        return reply

    def failed(self, exc: BaseException) -> None:
        """The model's call raised ``exc``: named with its model, its spent usage priced;
        the caller re-raises it.

        Raises:
            ModelError: ``exc`` is a stray ``BaseException`` (see :mod:`regiment._stray`).
        """
        if stray(exc):
            raise _stray_error(self.model, exc) from exc
        name_model(self.model, exc)
        _price_spent(self.price, exc)

    def _held(self, request: ModelRequest) -> int | None:
        """The ``max_tokens`` a budget held ``request`` (its role's settings merged in) to
        (``capped`` sets it in both the request and its settings); ``None``: not held."""
        s = request.settings
        most = None if s is None else s.max_tokens
        if most is None or most != request.max_tokens:
            return None
        return most if self.settings is None or self.settings.max_tokens != most else None

    def capped(self, request: ModelRequest, room: int | None) -> ModelRequest | None:
        """``request`` with its reply held to ``room`` tokens (what a budget has left for
        it) over every layer of settings; as it is when it asks for no more (``room``
        ``None``: no limit). ``None`` when no such call can be made: Claude thinking with
        ``thinking_budget`` (at least 1024, and below ``max_tokens``) needs more room."""
        if room is None:  # the usual case: nothing to hold it to
            return request
        own = request.settings if self.settings is None else self.settings.merge(request.settings)
        applied = effective_settings(
            getattr(self.model, "settings", None),
            request if own is request.settings else msgspec.structs.replace(request, settings=own),
        )
        wanted = request.max_tokens if applied.max_tokens is None else applied.max_tokens
        if wanted <= room:
            return request
        cap = ModelSettings(max_tokens=room)
        thinking = applied.thinking_budget
        if thinking is not None and thinking >= room and self.model.provider == "anthropic":
            if room <= _LEAST_THINKING:
                return None
            cap = ModelSettings(max_tokens=room, thinking_budget=room - 1)  # must stay below
        held = cap if request.settings is None else request.settings.merge(cap)
        return msgspec.structs.replace(request, settings=held, max_tokens=room)

    def _checked(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        """``response`` made encodable (``valid_response``), unless the model refused.

        Raises:
            ModelRefused: the reply is a refusal (nothing a run may act on).
        """
        response = valid_response(response, self.model)
        if response.stop_reason in STOPPED_EARLY:
            self._stopped_early(response, request)
        return response

    def _stopped_early(self, response: ModelResponse, request: ModelRequest) -> None:
        """Refuse a refusal; log a reply cut at its length limit.

        Raises:
            ModelRefused: the reply is a refusal (nothing a run may act on).
        """
        if response.refused:
            raise ModelRefused(
                f"model {self.model.name!r} declined to answer for {self.agent!r} (stop reason "
                f"{response.stop_reason!r}; it wrote {response.text[:200]!r}); rephrase the "
                "goal or the role's instructions, or give this role another model",
                usage=response.usage,  # billed all the same: the step or run is charged
            )
        if response.cut_off:  # a worker's tool calls in it are not run (run_tool_loop)
            limit, advice = _CUT_ADVICE.get(response.stop_reason, _MAX_TOKENS)
            if response.stop_reason not in _CUT_ADVICE and (held := self._held(request)):
                limit, advice = f"the {held} tokens its budget had left for it", _HELD
            _log.warning(
                "the reply of model %r for %r reached %s (stop reason %r), so its text is cut short; %s",
                self.model.name,
                self.agent,
                limit,
                response.stop_reason,
                advice,
            )

    async def _measured(
        self, request: ModelRequest, live: LiveSink | None, metrics: RunMetrics
    ) -> ModelResponse:
        """The call, recorded in the GenAI client histograms."""
        model = self.model
        attributes: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
            sc.GEN_AI_PROVIDER_NAME: model.provider,
            sc.GEN_AI_REQUEST_MODEL: model.name,
        }
        server = _server(model)
        if server is not None:
            attributes[sc.SERVER_ADDRESS] = server[0]
            if server[1] is not None:
                attributes[sc.SERVER_PORT] = server[1]
        started = time.perf_counter()
        try:
            response = await self.traced(request, live)
        except Exception as exc:
            spent = exc.usage if isinstance(exc, ModelError) else None  # a refusal is billed
            metrics.model_call(
                attributes,
                time.perf_counter() - started,
                error_type=error_type(exc),
                input_tokens=None if spent is None else spent.whole_input_tokens,
                output_tokens=None if spent is None else spent.output_tokens,
            )
            raise
        if response.model:
            attributes[sc.GEN_AI_RESPONSE_MODEL] = response.model
        usage = response.usage
        metrics.model_call(
            attributes,
            time.perf_counter() - started,
            input_tokens=usage.whole_input_tokens,
            output_tokens=usage.output_tokens,
        )
        return response

    async def traced(self, request: ModelRequest, live: LiveSink | None = None) -> ModelResponse:
        """``call`` with no settings or metrics: a traced worker step awaits it itself (#22)."""
        telemetry = self.telemetry
        model = self.model
        if not telemetry.traced:  # no span: nothing to work out for one
            return self._checked(await _reply(model, request, live, self.price), request)
        # getattr first: a runtime protocol check is slow, and only SDK models say yes.
        sdk = getattr(model, "sdk_spans", False) is True
        if sdk and isinstance(model, SelfTracingModel):
            # The SDK's own span is this call's one `chat` span; send it to our provider.
            traced = model.with_tracer_provider(telemetry.tracer_provider)
            return self._checked(await _reply(traced, request, live, self.price), request)
        # The applied settings go in with the span's start attributes (one dict, no
        # second call on the span); content is built only when it will be recorded.
        tuning = _tuning(getattr(model, "settings", None), request)
        if request.output is not None:  # a structured answer: the conventions' output type
            tuning[sc.GEN_AI_OUTPUT_TYPE] = sc.OUTPUT_TYPE_JSON
        with telemetry.chat_span(
            model.name,
            model.provider,
            agent_name=self.agent,
            server=_server(model),
            attributes=tuning,
        ) as span:
            content = telemetry.recorder.capture and span.is_recording()  # (no property hop)
            if content:
                telemetry.recorder.chat_input(
                    span, system=request.system, messages=input_messages(request.messages)
                )
            try:  # (``_reply``'s work, with no coroutine of its own)
                reply = await (
                    model.complete(request) if live is None else live.streamed(model, request)
                )
            except BaseException as exc:  # named, priced, a stray one made a ModelError
                self.failed(exc)
                if not isinstance(exc, ModelError) or exc.usage is None:
                    raise
                if span.is_recording():  # what a failed call spent is on its span too
                    telemetry.recorder.chat_response(span, finish_reasons=(), usage=exc.usage)
                    if exc.usage_estimated:
                        span.set_attribute(sc.REGIMENT_USAGE_ESTIMATED, True)
                raise
            # Recorded before a refusal is refused: its span shows what it cost, and why.
            reply = reply if (price := self.price) is None else _priced(reply, price)
            response = valid_response(reply, model)
            if span.is_recording():
                telemetry.recorder.chat_response(
                    span,
                    finish_reasons=(response.stop_reason,),
                    usage=response.usage,
                    response_model=response.model,
                    response_id=response.response_id,
                )
                if response.usage_estimated:
                    span.set_attribute(sc.REGIMENT_USAGE_ESTIMATED, True)
                if content:
                    telemetry.recorder.chat_output(span, output_messages(response))
            if response.stop_reason in STOPPED_EARLY:
                self._stopped_early(response, request)
            return response


def input_messages(messages: tuple[Message, ...]) -> list[genai.GenAIValue]:
    """A conversation as ``gen_ai.input.messages`` wants it: a user turn that only
    answers tool calls is a ``tool`` message."""
    return [
        genai.chat_message(
            "tool" if all(isinstance(p, ToolResultPart) for p in m.parts) and m.parts else m.role,
            [_part(part) for part in m.parts],
        )
        for m in messages
    ]


def output_messages(response: ModelResponse) -> list[genai.GenAIValue]:
    """A reply as ``gen_ai.output.messages`` wants it: one assistant message."""
    parts = [_part(part) for part in response.parts]
    return [genai.output_message(parts, response.stop_reason)]


def _part(part: Part) -> genai.GenAIValue:
    match part:
        case TextPart(text=text):
            return genai.text_part(text)
        case ToolCallPart(id=call_id, name=name, arguments=arguments):
            return genai.tool_call_part(call_id, name, arguments)
        case ToolResultPart(call_id=call_id, content=content):
            return genai.tool_call_response_part(call_id, content)
        case ThinkingPart(thinking=thinking):
            return genai.reasoning_part(thinking)
        case _:
            assert_never(part)


async def _reply(
    model: Model, request: ModelRequest, live: LiveSink | None, price: Price | None
) -> ModelResponse:
    """The model's reply, priced: streamed to ``live`` as it is written, or in one piece."""
    try:
        if live is None:
            response = await model.complete(request)
        else:
            response = await live.streamed(model, request)
    except BaseException as exc:  # a cancellation or an interrupt, as a rule
        if stray(exc):
            raise _stray_error(model, exc) from exc
        name_model(model, exc)
        _price_spent(price, exc)
        raise
    return response if price is None else _priced(response, price)


def _priced(response: ModelResponse, price: Price) -> ModelResponse:
    """``response`` with what it cost at ``price`` in its usage (``Usage.micro_usd``)."""
    return msgspec.structs.replace(response, usage=priced(response.usage, price))


def _price_spent(price: Price | None, exc: BaseException) -> None:
    """A failed call's spent usage (billed all the same) priced at its model's ``price``."""
    if price is not None and isinstance(exc, ModelError) and exc.usage is not None:
        exc.usage = priced(exc.usage, price)


def _stray_error(model: Model, exc: BaseException) -> ModelError:
    """The failed call of a model that raised a ``BaseException`` on its own (see
    :mod:`regiment._stray`): asyncio's ``CancelledError`` would end the worker's task."""
    return ModelError(
        f"model {model.name!r} {stray_reason(exc)}; a Model must raise an Exception for a "
        "failed call (regiment.errors.ModelError, say), never this"
    )
