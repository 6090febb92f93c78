"""The one seam every role talks to a model through."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from regiment.models._messages import ModelRequest, ModelResponse

__all__ = ("Model",)


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
