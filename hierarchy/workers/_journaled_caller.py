"""A step's model caller whose replies are replayed or journaled by its ``StepCalls``."""

from __future__ import annotations

from typing import final

from regiment.hierarchy._live_events import LiveSink
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.models import ModelRequest, ModelResponse

__all__ = ("JournaledCaller",)


@final
class JournaledCaller:
    """A step's model caller whose replies are replayed or journaled (``StepCalls.model``)."""

    __slots__ = ("_caller", "_calls", "_held")

    def __init__(self, calls: StepCalls, caller: ModelCaller, *, held: bool = False) -> None:
        self._calls = calls
        self._caller = caller
        self._held = held  # reply guards judge each reply before a reader may see it

    async def call(self, request: ModelRequest, live: LiveSink | None = None) -> ModelResponse:
        """The step's next reply (the step's own live sink streams it; ``live`` is unused)."""
        return await self._calls.model(self._caller, request, held=self._held)

    def passed(self, request: ModelRequest, response: ModelResponse) -> None:
        """The guards let ``response`` (as they left it) through: a held reply is streamed."""
        if self._held:
            self._calls.tell(request, response)
