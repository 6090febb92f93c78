"""Critique rounds and context compression, as requests and replies.

The run actor decides *when* (after a plan's steps are committed; before a
planner-side call whose prompt carries the committed results); this module
knows *what* to ask and how to read the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import final

from opentelemetry.trace import Span

from regiment.hierarchy._critic import Critic, Verdict, parse_verdict
from regiment.hierarchy._events import ContextCompressed, CritiqueCompleted, RoundStarted
from regiment.hierarchy._memory import Compression, parse_memory
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._planner import PlanningSession
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy._run_base import RunBase, TeamRuntime
from regiment.hierarchy._run_messages import Purpose
from regiment.hierarchy._run_state import RunChannel, RunState
from regiment.models import Message, ModelRequest, estimate_tokens

__all__ = (
    "CritiqueSession",
    "RunRounds",
    "apply_compression",
    "compress_request",
    "compression_due",
)

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


class RunRounds(RunBase):
    """The run actor's round layer: planning a tail after the committed steps,
    critiquing a finished plan, and compressing the carried context."""

    def __init__(
        self, team: TeamRuntime, run_id: str, goal: str, channel: RunChannel, run_span: Span
    ) -> None:
        super().__init__(team, run_id, goal, channel, run_span)
        planner_model = team.planner.model
        critic_model = (team.critic.model if team.critic else None) or planner_model
        self._critic_caller = ModelCaller(critic_model, "critic", team.telemetry)
        compressor = (team.compression.model if team.compression else None) or planner_model
        self._compress_caller = ModelCaller(compressor, "compressor", team.telemetry)
        self._critique: CritiqueSession | None = None
        self._after_compress: Callable[[], None] | None = None
        self._compress_before = 0
        self._round_added = 0

    def _plan_tail(self, purpose: Purpose, request_text: str) -> None:
        """Ask the planner for steps after the committed ones (a replan or a new round)."""
        state, team = self._state, self._team
        assert self._session is not None
        self._session = PlanningSession(
            system=self._session.system,
            messages=[Message.user(request_text)],
            max_steps=team.planner.max_steps,
            start_index=state.next_step_number(),
            workers=team.workers,
            checks=team.checks,
            known_ids=tuple(state.committed),
        )
        self._call_model(purpose, self._planner_caller, self._session.request())

    def _plan_done(self) -> None:
        """Every step of the current plan is committed: critique the round, or answer."""
        if self._refused_and_spent():
            return
        critic = self._team.critic
        # A critique is only worth its call if a synthesis can still follow it, and
        # if the round did something new to judge.
        nothing_new = self._state.round > 1 and self._round_added == 0
        if (
            critic is None
            or nothing_new
            or self._state.ledger.exhausted(model_calls_needed=2) is not None
        ):
            self._with_compression(self._synthesize)
            return
        self._phase = "critiquing"
        self._with_compression(self._ask_critic)

    def _ask_critic(self) -> None:
        assert self._team.critic is not None
        self._critique = CritiqueSession.open(
            team=self._team.name,
            critic=self._team.critic,
            prompts=self._team.planner.prompts,
            state=self._state,
        )
        self._call_model("critique", self._critic_caller, self._critique.request())

    def _on_critique(self, reply: str) -> None:
        state, session = self._state, self._critique
        assert session is not None
        verdict = session.evaluate(reply, self._team.planner.prompts)
        if verdict is None:
            self._call_model("critique", self._critic_caller, session.request())
            return
        state.verdicts.append(verdict)
        self._emit(CritiqueCompleted(run_id=state.run_id, verdict=verdict))
        if verdict.passed or state.round >= self._team.budget.rounds:
            self._synthesize()
            return
        state.round += 1
        self._replan_reason = (
            f"round {state.round}: the critic found the goal unmet: {verdict.feedback}"
        )
        self._emit(RoundStarted(run_id=state.run_id, round=state.round, feedback=verdict.feedback))
        self._phase = "planning"
        request_text = self._team.planner.prompts.round_request(
            goal=state.goal,
            round=state.round,
            committed=state.committed_text(),
            feedback=verdict.feedback,
            next_id=state.next_step_number(),
        )
        self._plan_tail("round", request_text)

    def _with_compression(self, then: Callable[[], None]) -> None:
        """Run ``then`` now, or after compressing the carried context if it is too big."""
        team, state = self._team, self._state
        before = compression_due(team.compression, state)
        if before is None or team.compression is None:
            then()
            return
        self._after_compress, self._compress_before = then, before
        request = compress_request(
            team=team.name, compression=team.compression, prompts=team.planner.prompts, state=state
        )
        self._call_model("compress", self._compress_caller, request)

    def _on_compressed(self, reply: str) -> None:
        self._emit(apply_compression(self._state, reply, before_tokens=self._compress_before))
        then, self._after_compress = self._after_compress, None
        assert then is not None
        then()
