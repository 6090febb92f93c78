"""A synthesizer reply with no text: asked again once, then kept and logged.

Kept as it was, the run completed with the answer ``''`` and nothing said so."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from regiment.errors import ModelError
from regiment.models import Message, ModelRequest, ModelResponse, TextPart, Usage

if TYPE_CHECKING:
    from regiment.hierarchy._live_events import LiveSink
    from regiment.hierarchy.guard._roles import Caller

__all__ = ("synthesized",)

_log = logging.getLogger("regiment.run")

_NOTE = (
    "(Your reply was empty. Write the answer to the goal from the committed step results "
    "above, as text.)"
)


async def synthesized(
    caller: Caller, request: ModelRequest, live: LiveSink | None, run_id: str
) -> tuple[ModelResponse, int]:
    """The synthesizer's reply, and how many model calls it took: an empty one is asked
    for again once (both are charged); a second empty one is the answer, with a WARNING."""
    response = await caller.call(request, live)
    if response.text.strip():
        return response, 1
    where = {"run_id": run_id, "step_id": None, "worker": None}
    _log.info("the synthesizer's reply was empty; asking again once", extra=where)
    last = request.messages[-1]
    noted = Message(role=last.role, parts=(*last.parts, TextPart(text=_NOTE)))
    again = msgspec.structs.replace(request, messages=(*request.messages[:-1], noted))
    try:
        second = await caller.call(again, live)
    except ModelError as exc:  # the empty reply was spent too
        exc.usage, exc.model_calls = response.usage + (exc.usage or Usage()), 2
        raise
    if not second.text.strip():
        _log.warning(
            "the synthesizer's reply was empty, and again when asked once more: the run's "
            "answer is empty (the steps' outputs are in its result); check the synthesizer's "
            "model and instructions",
            extra=where,
        )
    return msgspec.structs.replace(second, usage=response.usage + second.usage), 2
