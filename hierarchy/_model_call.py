"""One place where the hierarchy calls a model, so every call is traced alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

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
