"""Critique rounds and context compression, as requests and replies.

The run actor decides *when* (after a plan's steps are committed; before a
planner-side call whose prompt carries the committed results); this module
knows *what* to ask and how to read the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

from regiment.hierarchy._critic import Critic, Verdict, parse_verdict
from regiment.hierarchy._events import ContextCompressed
from regiment.hierarchy._memory import Compression, parse_memory
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy._run_state import RunState
from regiment.models import Message, ModelRequest, estimate_tokens

__all__ = ("CritiqueSession", "compression_due", "compress_request", "apply_compression")

# Replies the critic may give before an unparseable verdict counts as passed-with-warning.
_CRITIC_ATTEMPTS = 2


@final
@dataclass(slots=True)
class CritiqueSession:
    """One critique of one round: the conversation with the critic."""

    system: str
    round: int
    messages: list[Message] = field(default_factory=list)
    attempts: int = 0

    @classmethod
    def open(
        cls, *, team: str, critic: Critic, prompts: Prompts, state: RunState
    ) -> CritiqueSession:
        request = prompts.critique_request(
            goal=state.goal, round=state.round, committed=state.committed_text()
        )
        system = prompts.critic_system(team=team, instructions=critic.prompt)
        return cls(system=system, round=state.round, messages=[Message.user(request)])

    def request(self) -> ModelRequest:
        return ModelRequest(system=self.system, messages=tuple(self.messages))

    def evaluate(self, reply: str, prompts: Prompts) -> Verdict | None:
        """The verdict, or ``None`` when the critic should be asked again.

        The rule for a reply that never parses: passed, with a warning (see
        :mod:`regiment.hierarchy._critic` for why).
        """
        self.attempts += 1
        verdict = parse_verdict(reply, round=self.round)
        if verdict is not None:
            return verdict
        if self.attempts < _CRITIC_ATTEMPTS:
            self.messages += [Message.assistant(reply), Message.user(prompts.critique_retry())]
            return None
        return Verdict(
            round=self.round,
            passed=True,
            warning=f"the critic's reply did not parse after {self.attempts} attempts; taken as passed: {reply[:200]!r}",
        )


def _carried(state: RunState) -> str:
    return state.committed_text() + ("\n" + state.last_feedback if state.last_feedback else "")


def compression_due(compression: Compression | None, state: RunState) -> int | None:
    """The carried context's estimated size when it is past the threshold, else ``None``."""
    if compression is None or not state.committed:
        return None
    size = estimate_tokens(_carried(state))
    return size if size > compression.threshold else None


def compress_request(
    *, team: str, compression: Compression, prompts: Prompts, state: RunState
) -> ModelRequest:
    """Ask the compressor for working memory (the goal is not sent: it is kept verbatim)."""
    text = prompts.compress_request(committed=state.committed_text(), critique=state.last_feedback)
    return ModelRequest(
        system=prompts.compressor_system(team=team, instructions=compression.prompt),
        messages=(Message.user(text),),
    )


def apply_compression(state: RunState, reply: str, *, before_tokens: int) -> ContextCompressed:
    """Replace the carried results with the working memory the reply gives."""
    state.memory = parse_memory(
        reply, committed={sid: r.output for sid, r in state.committed.items()}
    )
    return ContextCompressed(
        run_id=state.run_id,
        before_tokens=before_tokens,
        after_tokens=estimate_tokens(_carried(state)),
        kept_step_ids=tuple(state.memory.facts),
    )
