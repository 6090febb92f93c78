"""How a nested run's tool call is named in its approval request's id.

A nested run is journaled with its top-level run and resumed with it, but what it
had not yet made durable when its process died (a plan reply still buffered, say) is
done again, and a planner model may then plan differently (other step ids, other
calls first); a run without a journal decides on nothing across processes at all. An
id made from the nested step's id and the call's number in that step could then differ
from the one a human decided, so the decision was never applied and the resumed run
paused again on the very same call. A nested call is named instead by
what it does (its worker, tool and arguments) and by how many such calls were asked
before it for the same top-level step.
"""

from __future__ import annotations

from typing import NamedTuple, final

import msgspec

from regiment.tools import ApprovalRequest

__all__ = ("NestedCalls",)


class _Top(NamedTuple):
    run_id: str
    plan_version: int
    step_id: str


@final
class NestedCalls:
    """The names given to the nested calls asked for each top-level step."""

    __slots__ = ("_steps",)

    def __init__(self) -> None:
        # per top-level step: each call's name (by where it was asked), how many of a kind
        self._steps: dict[_Top, tuple[dict[tuple[object, ...], tuple[str, int]], dict[str, int]]]
        self._steps = {}

    def name(
        self, top: tuple[str, int, str], where: tuple[object, ...], request: ApprovalRequest
    ) -> tuple[str, int]:
        """The call's kind and its number among the calls of that kind asked for ``top``'s
        step (the same for the same ``where``: a call asked again is the same request)."""
        names, counts = self._steps.setdefault(_Top(*top), ({}, {}))
        named = names.get(where)
        if named is None:
            arguments = msgspec.json.encode(request.arguments, order="sorted").decode()
            kind = f"call\x1f{request.tool_name}\x1f{arguments}"
            number = counts.get(kind, 0)
            counts[kind] = number + 1
            named = names[where] = (kind, number)
        return named

    def restart(self, top: tuple[str, int, str]) -> None:
        """``top``'s step starts a nested run afresh: its calls are counted from 0."""
        self._steps.pop(_Top(*top), None)

    def forget(self, run_id: str) -> None:
        """The top-level run ended: its steps' names go."""
        for top in [t for t in self._steps if t.run_id == run_id]:
            del self._steps[top]
