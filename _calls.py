"""The model and tool calls a run made, as its last end counted them: what ``regiment show``
(its ``calls:`` line and ``--json``) and the service's ``GET /runs/{id}`` say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ("call_counts",)

_CALLS = ("model_calls", "tool_calls")


class _Counted(Protocol):
    """A run's end with its tally: ``RunResult``, ``RunFailed``."""

    @property
    def model_calls(self) -> int: ...

    @property
    def tool_calls(self) -> int: ...


def call_counts(end: Mapping[str, object] | _Counted | None) -> dict[str, object]:
    """``model_calls`` and ``tool_calls`` of a run's last end: a ``RunCompleted``'s result (a
    pause's too: so far), a ``RunFailed`` that says what the run got to, or a
    ``RunFinished``'s result, as the engine's struct or as the journal's JSON (a resumed
    run's: the whole run's); ``None`` each before any end (it runs, or its process died
    first)."""
    if end is None:
        return dict.fromkeys(_CALLS)
    if isinstance(end, Mapping):
        return {key: end.get(key) for key in _CALLS}
    return {"model_calls": end.model_calls, "tool_calls": end.tool_calls}
