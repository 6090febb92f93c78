"""The one seam every role talks to a model through."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from regiment.models._messages import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ("Model", "SelfTracingModel")


@runtime_checkable
class Model(Protocol):
    """A model regiment can call: one async completion, our own types in and out.

    Implementations translate ``ModelRequest`` to their provider and the reply
    back to ``ModelResponse``. They retry transient failures themselves and
    raise a ``regiment.errors.ModelError`` for anything left over.
    """

    @property
    def name(self) -> str:
        """The model id, e.g. ``"claude-sonnet-4-5"`` or ``"scripted"``."""
        ...

    @property
    def provider(self) -> str:
        """Who serves it, as OpenTelemetry's ``gen_ai.provider.name`` (``"anthropic"``)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one model call.

        Raises:
            regiment.errors.ModelError: the call failed after the provider's own retries.
        """
        ...


@runtime_checkable
class SelfTracingModel(Model, Protocol):
    """A model whose client may make its own OpenTelemetry span per call
    (``AnthropicModel`` with the SDK's tracing on).

    When ``sdk_spans`` is true, that span is the call's one ``chat`` span: a team
    opens none of its own and sends the client's spans to its tracer provider
    through ``with_tracer_provider``.
    """

    @property
    def sdk_spans(self) -> bool:
        """Whether each call makes its own span."""
        ...

    def with_tracer_provider(self, tracer_provider: TracerProvider) -> Model:
        """The model to call so that its spans go to ``tracer_provider``."""
        ...
