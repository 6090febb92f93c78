"""Tool-call ids made distinct within one reply, before the conversation goes back.

A provider's next request carries every call of a reply with its result, matched by
id, and refuses two calls of one reply with the same id (Claude's Messages API:
"tool_use ids must be unique"); a server that is not the provider's own (an
OpenAI-compatible one, a proxy) may send such a reply all the same. Each call is a
call the model asked for, so each runs and gets its own result: the second and later
calls of an id get ``<id>_2``, ``<id>_3``, ... (the first keeps its own), in the reply
as the run keeps it (its events, journal and the request that sends it back).
"""

from __future__ import annotations

import logging

import msgspec

from regiment.models._messages import ModelResponse, ResponsePart, ToolCallPart

__all__ = ("distinct_call_ids",)

_log = logging.getLogger("regiment.models")


def distinct_call_ids(response: ModelResponse, model: str) -> ModelResponse:
    """``response`` with no two tool calls of the same id (as it is when none repeats;
    a WARNING on ``regiment.models`` names the ids made when one did)."""
    ids = [part.id for part in response.parts if type(part) is ToolCallPart]
    if len(ids) < 2 or len(set(ids)) == len(ids):  # the usual reply: nothing to make
        return response
    taken, seen, made = set(ids), set(), []
    parts: list[ResponsePart] = []
    for part in response.parts:
        if type(part) is ToolCallPart:
            if part.id in seen:
                number = 2
                while f"{part.id}_{number}" in taken:
                    number += 1
                new = f"{part.id}_{number}"
                taken.add(new)
                made.append(f"{part.id!r} -> {new!r}")
                part = msgspec.structs.replace(part, id=new)
            seen.add(part.id)
        parts.append(part)
    _log.warning(
        "model %r gave %d tool calls of one reply an id another call of it has; each call "
        "runs and gets its own result, under an id of its own (%s): the provider refuses "
        "two calls of one reply with the same id",
        model,
        len(made),
        ", ".join(made),
    )
    return msgspec.structs.replace(response, parts=tuple(parts))
