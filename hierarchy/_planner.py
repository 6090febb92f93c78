"""The planner: its configuration, and turning its replies into valid plans."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import final

import msgspec

from regiment.hierarchy._checks import Check
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy._ranges import at_least, model_given, part_given, settings_given
from regiment.hierarchy.guard._note import SubjectKind
from regiment.hierarchy.guard._types import GuardLike, as_guardrails
from regiment.hierarchy.plan._parse import ParsedPlan, parse_plan
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.plan._validate import CutSteps, validate_plan
from regiment.hierarchy.workers._worker import WorkerSpec
from regiment.models import Message, Model, ModelRequest, ModelSettings

__all__ = ("PlanAttempt", "Planner", "PlanningSession", "no_plan_advice")


@final
@dataclass(frozen=True, kw_only=True)
class Planner:
    """How a team plans and writes its answer.

    Attributes:
        model: the planner's model (also the synthesizer's unless ``synthesizer_model``).
        max_steps: the longest plan accepted (>= 1); longer plans are truncated
            (and the truncation recorded).
        max_plan_attempts: replies per planning phase before the run fails with
            ``PlanError`` (>= 1).
        prompts: instructions for planner, workers and synthesizer.
        synthesizer_model: a different model for the final answer.
        name: the planner's name in traces.
        settings: how planning calls are tuned (plan, replan, a new round's plan),
            over the team's ``settings``.
        synthesizer_settings: how the final answer's call is tuned, over the
            team's ``settings``.
        guardrails: guards of the planner role: around its model calls and over
            every plan before dispatch (after the team's); a tripped plan goes
            back to the planner with the reason, within ``max_plan_attempts``.
        synthesizer_guardrails: guards of the synthesizer role: around its model
            call and over the final answer (a tripped answer is asked for once
            more with the reason, then the run fails with ``GuardrailError``).
    """

    model: Model
    max_steps: int = 10
    max_plan_attempts: int = 3
    prompts: Prompts = field(default_factory=Prompts)
    synthesizer_model: Model | None = None
    name: str = "planner"
    settings: ModelSettings | None = None
    synthesizer_settings: ModelSettings | None = None
    guardrails: Sequence[GuardLike] = ()
    synthesizer_guardrails: Sequence[GuardLike] = ()

    def __post_init__(self) -> None:
        own = as_guardrails(self.guardrails, "planner: ", ("model_request", "model_reply", "plan"))
        object.__setattr__(self, "guardrails", own)
        kinds: tuple[SubjectKind, ...] = ("model_request", "model_reply", "answer")
        spelled = "synthesizer_guardrails=[{}]".format
        synth = as_guardrails(self.synthesizer_guardrails, "synthesizer: ", kinds, spelled)
        object.__setattr__(self, "synthesizer_guardrails", synth)
        model_given("Planner", "model", self.model)
        model_given("Planner", "synthesizer_model", self.synthesizer_model, optional=True)
        at_least("Planner", "max_steps", self.max_steps, 1)
        at_least("Planner", "max_plan_attempts", self.max_plan_attempts, 1)
        part_given("Planner", "prompts", self.prompts, Prompts, "Prompts(...)", optional=False)
        settings_given(
            "Planner", settings=self.settings, synthesizer_settings=self.synthesizer_settings
        )

    def __repr__(self) -> str:  # its prompts are long: Planner.prompts has them
        return f"Planner(model={self.model!r}, max_steps={self.max_steps})"


_CUT_OFF = (
    "the reply reached its max_tokens limit before it was finished, so the plan may be cut "
    "short; reply with a shorter plan (fewer or briefer steps)"
)


@final
class PlanAttempt(msgspec.Struct, frozen=True):
    """One planner reply, parsed and validated."""

    parsed: ParsedPlan
    problems: tuple[str, ...]
    reply: str


@dataclass(slots=True)
class PlanningSession:
    """One planning phase (the first plan or a replan): the conversation with the
    planner model, re-prompted with the exact problems until a plan is valid."""

    system: str
    messages: list[Message]
    max_steps: int
    start_index: int
    workers: Mapping[str, WorkerSpec]
    checks: Mapping[str, Check]
    known_ids: Sequence[str] = ()
    # The steps a replan (or a new round) keeps, by id: a reply that restates one of
    # them (same id, same description) is read as naming it, not as a new step.
    kept: Mapping[str, PlanStep] = field(default_factory=dict)
    # Of ``known_ids``, the steps kept as evidence though their check rejected them: a
    # reply that lists one again (by its id) runs it again, in place of its evidence.
    rejected: Collection[str] = ()
    replaced_ids: Sequence[str] = ()  # the unfinished steps of the version a replan replaces
    attempts: int = 0
    problems: tuple[str, ...] = ()  # the last reply's (none: it gave a valid plan)

    def request(self) -> ModelRequest:
        return ModelRequest(system=self.system, messages=tuple(self.messages))

    def evaluate(self, reply: str, *, cut_off: bool = False) -> PlanAttempt:
        """Parse and validate a reply; remember it for a re-prompt. A reply ``cut_off``
        at its length limit is refused: a prose plan would lose its last steps unseen."""
        self.attempts += 1
        sole = next(iter(self.workers)) if len(self.workers) == 1 else None
        parsed = parse_plan(
            reply, max_steps=self.max_steps, start_index=self.start_index, default_worker=sole
        )
        if self.kept and parsed.error is None:
            parsed = _without_restated(parsed, self.kept)
        steps = parsed.steps
        if parsed.error is not None:
            problems: tuple[str, ...] = (parsed.error,)
        else:
            problems = validate_plan(
                steps,
                workers=tuple(self.workers),
                known_ids=self.known_for(steps),
                checks=tuple(self.checks),
                written_as=parsed.written_as,
                replaced_ids=self.replaced_ids,
                cut=self._cut(reply, parsed),
            )
        if cut_off:
            problems = (_CUT_OFF, *problems)
        self.messages.append(Message.assistant(reply))
        self.problems = problems
        return PlanAttempt(parsed=parsed, problems=problems, reply=reply)

    def _cut(self, reply: str, parsed: ParsedPlan) -> CutSteps | None:
        """The steps of ``reply`` that ``max_steps`` cut from ``parsed`` (read again, whole,
        only for a reply that was cut)."""
        written = parsed.truncated_from
        if written is None:
            return None
        whole = parse_plan(reply, max_steps=written, start_index=self.start_index)
        kept = {step.id for step in parsed.steps}
        ids = [step.id for step in whole.steps[self.max_steps :] if step.id not in kept]
        return CutSteps(ids, self.max_steps, written)

    def known_for(self, steps: Sequence[PlanStep]) -> Sequence[str]:
        """The ids ``steps`` may not take: the kept steps' but a rejected step's that
        ``steps`` lists again (run again)."""
        if not self.rejected:
            return self.known_ids
        again = {step.id for step in steps if step.id in self.rejected}
        return [sid for sid in self.known_ids if sid not in again] if again else self.known_ids

    def reprompt(self, problems: Sequence[str], prompts: Prompts) -> None:
        self.messages.append(Message.user(prompts.plan_problems(problems)))


def _without_restated(parsed: ParsedPlan, kept: Mapping[str, PlanStep]) -> ParsedPlan:
    """``parsed`` without the steps that restate a kept step: a model asked for the new
    steps often repeats the whole plan, the finished steps included. Such a step keeps
    its result (dependencies on its id name the kept step); a step that takes a kept id
    for other work is left in, for the validator to send back."""
    new = tuple(step for step in parsed.steps if not _restates(step, kept.get(step.id)))
    if len(new) == len(parsed.steps):
        return parsed
    return msgspec.structs.replace(parsed, steps=new)


def _restates(step: PlanStep, kept: PlanStep | None) -> bool:
    if kept is None:
        return False
    same = " ".join(step.description.split()).casefold()
    return same == " ".join(kept.description.split()).casefold()


def no_plan_advice(attempts: int) -> str:
    """What a ``PlanError``'s reader can do once the planner's replies ran out: its
    problems are worded for the model ("reply with ..."), not for the user."""
    return (
        "; each reply went back to the planner's model with what was wrong "
        "(PlanError.last_reply is its last reply): give the planner a model or prompt that "
        f"plans better, or raise Planner.max_plan_attempts ({attempts}; `max_plan_attempts` "
        "under `[planner]` in a team file)"
    )
