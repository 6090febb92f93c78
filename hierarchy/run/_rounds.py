"""Critique rounds and context compression: what to ask, and how to read the answer.

The planner actor decides *when* (after a plan's steps are committed; before a
planner-side call whose prompt carries the committed results); this module
knows *what* to ask and how to read the reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

from regiment.hierarchy._budget import Budget
from regiment.hierarchy._critic import Critic, Verdict, parse_verdict
from regiment.hierarchy._memory import Compression, WorkingMemory, parse_memory, read_reply
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.run import _logs as logs
from regiment.hierarchy.run._versions import PlanVersions
from regiment.models import Message, ModelRequest, estimate_tokens

if TYPE_CHECKING:
    from regiment.hierarchy.run._book import RunBook

__all__ = (
    "CritiqueSession",
    "Rounds",
    "carried_tokens",
    "compress_request",
    "compression_due",
    "read_memory",
    "rounds_spent",
)

# Replies the critic may give before an unparseable verdict counts as passed-with-warning.
_CRITIC_ATTEMPTS = 2


@final
@dataclass(slots=True)
class Rounds:
    """The run's round number and the critic's verdicts so far."""

    round: int = 1
    verdicts: list[Verdict] = field(default_factory=list)
    added: int = 0  # steps the current round's plan added (a round adding none is not judged)

    @property
    def last_feedback(self) -> str:
        return self.verdicts[-1].feedback if self.verdicts else ""


@final
@dataclass(slots=True)
class CritiqueSession:
    """One critique of one round: the conversation with the critic."""

    system: str
    round: int
    messages: list[Message] = field(default_factory=list)
    attempts: int = 0
    run_id: str = ""  # for the log record of a retry

    @classmethod
    def open(
        cls,
        *,
        run_id: str,
        team: str,
        goal: str,
        critic: Critic,
        prompts: Prompts,
        versions: PlanVersions,
        round: int,
    ) -> CritiqueSession:
        request = prompts.critique_request(
            goal=goal, round=round, committed=versions.committed_text()
        )
        system = prompts.critic_system(team=team, instructions=critic.prompt)
        return cls(system=system, round=round, messages=[Message.user(request)], run_id=run_id)

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
            why = f"attempt {self.attempts} of {_CRITIC_ATTEMPTS}: the verdict did not parse"
            logs.model_retry(self.run_id, "critique", "critic", why)
            return None
        warning = (
            f"the critic's reply did not parse after {self.attempts} attempts; "
            f"taken as passed: {reply[:200]!r}"
        )
        logs.critique_unread(self.run_id, self.round, warning)  # a quality gate left open
        return Verdict(round=self.round, passed=True, warning=warning)


def _carried(versions: PlanVersions, rounds: Rounds) -> str:
    feedback = rounds.last_feedback
    return versions.committed_text() + ("\n" + feedback if feedback else "")


def compression_due(
    compression: Compression | None, versions: PlanVersions, rounds: Rounds
) -> int | None:
    """The carried context's estimated size when it is past the threshold, else ``None``."""
    if compression is None or not versions.committed:
        return None
    size = estimate_tokens(_carried(versions, rounds))
    return size if size > compression.threshold else None


def compress_request(
    *, team: str, compression: Compression, prompts: Prompts, versions: PlanVersions, rounds: Rounds
) -> ModelRequest:
    """Ask the compressor for working memory (the goal is not sent: it is kept verbatim)."""
    text = prompts.compress_request(
        committed=versions.committed_text(), critique=rounds.last_feedback
    )
    return ModelRequest(
        system=prompts.compressor_system(team=team, instructions=compression.prompt),
        messages=(Message.user(text),),
    )


def read_memory(reply: str, book: RunBook) -> WorkingMemory:
    """The working memory a compressor's reply gives for the committed steps (a
    WARNING names the steps it left out: they are carried as they were)."""
    committed = {sid: r.output for sid, r in book.versions.committed.items()}
    read = read_reply(reply)
    given = {} if read is None else read.facts
    if left := [sid for sid in committed if not given.get(sid)]:
        logs.compressor_left_out(book.run_id, left, reply if read is None else None)
    return parse_memory(reply, committed=committed)


def carried_tokens(versions: PlanVersions, rounds: Rounds) -> int:
    """The carried context's estimated size now."""
    return estimate_tokens(_carried(versions, rounds))


def rounds_spent(verdict: Verdict, round: int, budget: Budget) -> str | None:
    """Why the run has no round left for a goal the critic still finds unmet (a spent
    ``rounds`` budget); ``None`` when the goal passed or another round may run."""
    if verdict.passed or round < budget.rounds:
        return None
    return f"the critic judged round {round} not done, and the budget allows {budget.rounds}"
