"""One place where the hierarchy calls a model, so every call is traced alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final
from urllib.parse import urlsplit

from regiment.hierarchy._text import valid_response
from regiment.models import Model, ModelRequest, ModelResponse
from regiment.telemetry import Telemetry

__all__ = ("ModelCaller",)


@final
@dataclass(frozen=True, slots=True)
class ModelCaller:
    """Calls ``model`` on behalf of ``agent`` (a role or worker name), inside a
    ``chat {model}`` span that is a child of whatever span is current."""

    model: Model
    agent: str
    telemetry: Telemetry

    async def call(self, request: ModelRequest) -> ModelResponse:
        """One model call; the reply's text is made encodable (see :mod:`regiment.hierarchy._text`)."""
        telemetry = self.telemetry
        with telemetry.chat_span(
            self.model.name,
            self.model.provider,
            agent_name=self.agent,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            server=_server(self.model),
        ) as span:
            if span.is_recording():
                telemetry.recorder.chat_input(
                    span, system=request.system, messages=request.messages
                )
            response = valid_response(await self.model.complete(request))
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
