"""Working memory: what a run carries between rounds and into step contexts,
compressed by a model call when it grows past a threshold.

What must survive compression is enforced by structure, not by trust: the goal
is never given to the compressor (it is kept verbatim beside the memory), every
committed step id keeps an entry (a step the compressor left out keeps its
own output, in full: a cut one could lose the fact a later step needs), and
the latest critique is kept as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import final

import msgspec

from regiment.hierarchy._ranges import (
    InvalidValue,
    at_least,
    fraction,
    model_given,
    settings_given,
)
from regiment.hierarchy._reply_json import json_objects, texts_of
from regiment.models import Model, ModelSettings

__all__ = ("Compression", "MemoryReply", "WorkingMemory", "parse_memory", "read_reply")

_PROMPT = """\
Compress the committed step results below into working memory for the rest of the
run. Keep every fact a later step could need (ids, numbers, names, tool results,
decisions); drop wording. Reply with JSON only:
{"facts": {"<step id>": "<its key facts>", ...}, "open_questions": ["..."]}
Every step id below must appear under "facts"."""


@final
@dataclass(frozen=True, kw_only=True)
class Compression:
    """When and how to compress the carried context.

    Attributes:
        threshold_tokens: compress when the carried context's estimated size
            passes this (>= 1); ``None`` means ``window_fraction`` of ``context_window``.
        context_window: the planner model's context window, in tokens (>= 1).
        window_fraction: the share of the window the carried context may take, in (0, 1].
        model: the compressor's model; ``None`` uses the planner's.
        prompt: instructions for the compressor.
        settings: how its calls are tuned, over the team's ``settings``.
    """

    threshold_tokens: int | None = None
    context_window: int = 200_000
    window_fraction: float = 0.5
    model: Model | None = None
    prompt: str = _PROMPT
    settings: ModelSettings | None = None

    def __post_init__(self) -> None:
        model_given("Compression", "model", self.model, optional=True)
        settings_given("Compression", settings=self.settings)
        derived = "window_fraction x context_window"
        at_least("Compression", "threshold_tokens", self.threshold_tokens, 1, none_means=derived)
        at_least("Compression", "context_window", self.context_window, 1)
        fraction("Compression", "window_fraction", self.window_fraction)
        if self.threshold < 1:
            raise InvalidValue(
                "Compression",
                "window_fraction",
                f"times context_window must be at least 1 token; got {self.window_fraction!r} "
                f"x {self.context_window} (raise one, or set threshold_tokens)",
            )

    @property
    def threshold(self) -> int:
        """The size, in estimated tokens, past which the context is compressed."""
        if self.threshold_tokens is not None:
            return self.threshold_tokens
        return int(self.context_window * self.window_fraction)


class WorkingMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The compressed state of a run.

    Attributes:
        facts: per committed step id, its key facts.
        open_questions: what is still unknown.
    """

    facts: dict[str, str]
    open_questions: tuple[str, ...] = ()

    def render(self) -> str:
        """The memory as prompt text."""
        lines = [f"- {sid}: {fact}" for sid, fact in self.facts.items()]
        if self.open_questions:
            lines += ["Open questions:", *(f"- {q}" for q in self.open_questions)]
        return "\n".join(lines)


class MemoryReply(msgspec.Struct, frozen=True):
    """What a compressor's reply says: facts per step id, and open questions."""

    facts: dict[str, str]
    open_questions: tuple[str, ...] = ()


def read_reply(text: str) -> MemoryReply | None:
    """The compressor's reply read leniently (a fact given as JSON data is kept as
    compact JSON); ``None`` when it holds no object with a ``"facts"`` object."""
    for reply in json_objects(text):
        facts = reply.get("facts")
        if isinstance(facts, dict):
            given = {str(sid): "\n".join(texts_of(fact)) for sid, fact in facts.items()}
            return MemoryReply(given, texts_of(reply.get("open_questions")))
    return None


def parse_memory(text: str, *, committed: Mapping[str, str]) -> WorkingMemory:
    """Read a compressor reply; every committed step id gets an entry whatever the reply
    says: a step it leaves out (or gives no facts) keeps its own output, in full.

    Args:
        text: the compressor's reply.
        committed: committed step id -> its full output.
    """
    reply = read_reply(text) or MemoryReply({})
    facts = {sid: reply.facts.get(sid) or output for sid, output in committed.items()}
    return WorkingMemory(facts=facts, open_questions=reply.open_questions)
