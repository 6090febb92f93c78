"""A synthesizer reply with no text: asked again once, then kept and logged.

Kept as it was, the run completed with the answer ``''`` and nothing said so. When
the budget cannot pay for the second ask, it is not made, and the run ends on that
limit (``Reasks.unpaid``: ``partial``, or ``BudgetExceeded``), as other budget stops do."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from regiment.errors import ModelError
from regiment.hierarchy.run._reask import Unpaid
from regiment.models import Message, ModelRequest, ModelResponse, TextPart, Usage

if TYPE_CHECKING:
    from regiment.hierarchy._live_events import LiveSink
    from regiment.hierarchy.guard._roles import Caller
    from regiment.hierarchy.run._reask import Reasks

__all__ = ("synthesized",)

_log = logging.getLogger("regiment.run")

_NOTE = (
    "(Your reply was empty. Write the answer to the goal from the committed step results "
    "above, as text.)"
)


async def synthesized(
    caller: Caller,
    request: ModelRequest,
    live: LiveSink | None,
    run_id: str,
    reasks: Reasks | None = None,
) -> tuple[ModelResponse, int]:
    """The synthesizer's reply, and how many model calls it took: an empty one is asked
    for again once (both are charged), held to what the run's budget has left after the
    first (``reasks``; not asked when nothing is: ``reasks.unpaid`` then says why, and
    the run ends on it); a second empty one is the answer, with a WARNING."""
    response = await caller.call(request, live)
    if response.text.strip():
        return response, 1
    where = {"run_id": run_id, "step_id": None, "worker": None}
    last = request.messages[-1]
    noted = Message(role=last.role, parts=(*last.parts, TextPart(text=_NOTE)))
    again = msgspec.structs.replace(request, messages=(*request.messages[:-1], noted))
    if reasks is not None:
        held = reasks.held(again, response.usage, 1)
        if isinstance(held, Unpaid):  # the run ends on the limit (a WARNING names it)
            _log.info(
                "the synthesizer's reply was empty, and it is not asked again: %s",
                held.why,
                extra=where,
            )
            return response, 1
        again = held
        await reasks.asking(again, 2)
    _log.info("the synthesizer's reply was empty; asking again once", extra=where)
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
