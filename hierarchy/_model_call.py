"""One place where the hierarchy calls a model, so every call is traced alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from regiment.models import Model, ModelRequest, ModelResponse

__all__ = ("ModelCaller",)


@final
@dataclass(frozen=True, slots=True)
class ModelCaller:
    """Calls ``model`` on behalf of ``agent`` (a role or worker name)."""

    model: Model
    agent: str

    async def call(self, request: ModelRequest) -> ModelResponse:
        """One model call."""
        return await self.model.complete(request)
