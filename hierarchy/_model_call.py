"""One place where the hierarchy calls a model, so every call is traced alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final
from urllib.parse import urlsplit

import msgspec
from opentelemetry.trace import Span

from regiment.hierarchy._live_events import LiveSink
from regiment.hierarchy._text import valid_response
from regiment.models import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    effective_settings,
    stream_response,
)
from regiment.telemetry import Telemetry, semconv

__all__ = ("ModelCaller",)


@final
@dataclass(frozen=True, slots=True)
class ModelCaller:
    """Calls ``model`` on behalf of ``agent`` (a role or worker name), inside a
    ``chat {model}`` span that is a child of whatever span is current."""

    model: Model
    agent: str
    telemetry: Telemetry
    settings: ModelSettings | None = None  # the role's, already merged over the team's

    async def call(self, request: ModelRequest, live: LiveSink | None = None) -> ModelResponse:
        """One model call; the reply's text is made encodable (see :mod:`regiment.hierarchy._text`).

        With ``live`` (the run is streamed), the model streams and its text goes
        to ``live`` as ``TextDelta`` s; without, it answers in one piece.
        """
        telemetry, settings = self.telemetry, self.settings
        if settings is not None:
            merged = settings.merge(request.settings)
            request = msgspec.structs.replace(request, settings=merged)
        with telemetry.chat_span(
            self.model.name, self.model.provider, agent_name=self.agent, server=_server(self.model)
        ) as span:
            if span.is_recording():  # what the provider applies: worked out only when traced
                _tuning(span, effective_settings(getattr(self.model, "settings", None), request))
                telemetry.recorder.chat_input(
                    span, system=request.system, messages=request.messages
                )
            if live is None:
                reply = await self.model.complete(request)
            else:
                reply = await stream_response(self.model, request, live.text_handler(request))
            response = valid_response(reply)
            if span.is_recording():
                telemetry.recorder.chat_response(
                    span,
                    finish_reasons=(response.stop_reason,),
                    usage=response.usage,
                    response_model=response.model,
                    response_id=response.response_id,
                )
                telemetry.recorder.chat_output(span, response.parts)
            return response


def _tuning(span: Span, applied: ModelSettings) -> None:
    """The settings a call is made with, as its span's ``gen_ai.request.*`` attributes."""
    stops = applied.stop_sequences
    values = {
        semconv.GEN_AI_REQUEST_MAX_TOKENS: applied.max_tokens,
        semconv.GEN_AI_REQUEST_TEMPERATURE: applied.temperature,
        semconv.GEN_AI_REQUEST_TOP_P: applied.top_p,
        semconv.GEN_AI_REQUEST_STOP_SEQUENCES: list(stops) if stops else None,
    }
    span.set_attributes({key: value for key, value in values.items() if value is not None})


def _server(model: Model) -> tuple[str, int | None] | None:
    """The host and port of a model's API, for models that say (``base_url``)."""
    base_url = getattr(model, "base_url", None)
    if base_url is None:
        return None
    parts = urlsplit(str(base_url))
    if not parts.hostname:
        return None
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.hostname, parts.port or default
