"""Claude's paused turns: a reply with stop reason ``pause_turn`` is not the end of it.

Server tools (web search, web fetch, code execution) run in a loop of the API's
own, and the API may pause a long turn before it ends. The reply then stops with
``pause_turn`` and, as the API asks, is sent back unchanged as the conversation's
last assistant turn (no user message after it), with the same tools, and the
model carries on. One model call is that whole turn: its legs' parts in order,
their usage summed (each leg is billed), the last leg's stop reason; a turn still
paused after ``max_continuations`` legs raises ``ModelAPIError``, charged what it spent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import cast

import msgspec
from anthropic.types import MessageParam, RawMessageStreamEvent
from opentelemetry import trace

from regiment.errors import ModelAPIError, ModelError
from regiment.models._anthropic_wire import CallParams
from regiment.models._messages import ModelResponse
from regiment.models._sdk_model import Attempt
from regiment.models._stream import DeltaHandler, PartDelta

__all__ = ("PAUSED", "Leg", "Paused", "content_of", "each_retried", "whole_turn")

PAUSED = "pause_turn"

Paused = list[dict[str, object]]
"""A paused reply's content blocks as the API sent them (server tool blocks too)."""

Leg = Callable[[CallParams, DeltaHandler | None], Awaitable[tuple[ModelResponse, Paused]]]
"""One request of a turn: its reply, and the reply's content as sent (for a paused one)."""

Retried = Callable[[Attempt, DeltaHandler | None], Awaitable[ModelResponse]]
"""Makes one request again as long as it may be (``SDKModel._retried``)."""

_log = logging.getLogger("regiment.models")


def each_retried(leg: Leg, retried: Retried) -> Leg:
    """``leg``, each request made again on its own by ``retried``: a continuation that
    fails is, not the legs before it (their server tools ran and were billed, and their
    pieces may be out)."""

    async def retried_leg(
        params: CallParams, on_delta: DeltaHandler | None
    ) -> tuple[ModelResponse, Paused]:
        kept: list[Paused] = []

        async def once(handler: DeltaHandler | None) -> ModelResponse:
            response, content = await leg(params, handler)
            kept.append(content)
            return response

        return await retried(once, on_delta), kept[-1]

    return retried_leg


async def whole_turn(
    leg: Leg, params: CallParams, on_delta: DeltaHandler | None, *, model: str, most: int
) -> ModelResponse:
    """The reply to ``params``, continued while the API pauses it, at most ``most`` times.

    Raises:
        regiment.errors.ModelAPIError: the turn was still paused after ``most``
            continuations (its ``usage`` is what the legs spent).
        regiment.errors.ModelError: a leg failed; its ``usage`` counts the legs before it.
    """
    turn: ModelResponse | None = None
    sent: Paused = []
    for continuation in range(most + 1):
        handler = _shifted(on_delta, len(turn.parts) if turn is not None else 0)
        try:
            response, content = await leg(_continued(params, sent), handler)
        except ModelError as exc:
            if turn is not None:  # the paused legs before it were billed
                exc.usage = turn.usage if exc.usage is None else turn.usage + exc.usage
            raise
        turn = response if turn is None else _joined(turn, response)
        if response.stop_reason != PAUSED:
            return turn
        if continuation == most:
            break
        sent += content
        _log.info(
            "model %r paused its turn (stop_reason pause_turn: its server tools are still "
            "at work); continuing it (continuation %d of at most %d)",
            model,
            continuation + 1,
            most,
        )
        trace.get_current_span().add_event(
            "regiment.model.pause_turn",
            {  # what the paused leg spent (the chat span's usage is every leg's)
                "regiment.model.continuation": continuation + 1,
                "gen_ai.usage.input_tokens": response.usage.whole_input_tokens,
                "gen_ai.usage.output_tokens": response.usage.output_tokens,
                "gen_ai.response.id": response.response_id or "",
            },
        )
    assert turn is not None
    error = ModelAPIError(
        f"model {model!r} still paused its turn (stop_reason pause_turn) after "
        f"{most} continuations (max_continuations={most}); raise AnthropicModel(..., "
        "max_continuations=...), or give its server tools a lower max_uses",
        error_type=PAUSED,
        permanent=False,
    )
    error.usage = turn.usage
    raise error


def _continued(params: CallParams, sent: Paused) -> CallParams:
    """``params`` with the paused content so far as the last, assistant turn."""
    if not sent:
        return params
    paused = cast(MessageParam, {"role": "assistant", "content": sent})
    return {**params, "messages": [*params["messages"], paused]}


def _joined(before: ModelResponse, after: ModelResponse) -> ModelResponse:
    return msgspec.structs.replace(
        after, parts=before.parts + after.parts, usage=before.usage + after.usage
    )


def _shifted(on_delta: DeltaHandler | None, by: int) -> DeltaHandler | None:
    """``on_delta`` with a later leg's part indexes moved past the parts before it."""
    if on_delta is None or by == 0:
        return on_delta
    handler = on_delta

    async def shifted(delta: PartDelta) -> None:
        await handler(msgspec.structs.replace(delta, index=delta.index + by))

    return shifted


def content_of(events: Sequence[RawMessageStreamEvent]) -> Paused:
    """A streamed reply's content blocks, as its events built them."""
    blocks: dict[int, dict[str, object]] = {}
    inputs: dict[int, str] = {}
    for event in events:
        if event.type == "content_block_start":
            blocks[event.index] = event.content_block.to_dict(mode="json")
        elif event.type == "content_block_delta" and event.index in blocks:
            block, delta = blocks[event.index], event.delta
            if delta.type == "input_json_delta":
                inputs[event.index] = inputs.get(event.index, "") + delta.partial_json
            elif delta.type == "text_delta":
                block["text"] = f"{block.get('text', '')}{delta.text}"
            elif delta.type == "thinking_delta":
                block["thinking"] = f"{block.get('thinking', '')}{delta.thinking}"
            elif delta.type == "signature_delta":
                block["signature"] = f"{block.get('signature', '')}{delta.signature}"
            elif delta.type == "citations_delta":
                cited = block.get("citations")
                block["citations"] = [
                    *(cited if isinstance(cited, list) else []),
                    delta.citation.to_dict(mode="json"),
                ]
    for index, raw in inputs.items():
        try:
            blocks[index]["input"] = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):  # sent back as it began; the API will say
            continue
    return [blocks[index] for index in sorted(blocks)]
