"""The prompts of each role, overridable as plain strings.

Every system prompt starts with a fixed role line ("You are the planner of
team 'x'", "You are worker 'y'", "You are the synthesizer"), so a rule-based
scripted model can tell the roles apart.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from regiment._stray import raised, users_failure
from regiment._text import counted
from regiment.errors import HookFailed
from regiment.hierarchy._messages import StepContext
from regiment.hierarchy.plan._plan import Plan, PlanStep

# HookFailed: regiment.errors's, re-exported
__all__ = ("CALLS_MADE", "HookFailed", "Prompts", "with_rejected")

_PLANNER = """\
Break the goal into steps for the workers below. Steps that do not depend on each
other run at the same time; a step only sees the results of the steps it depends on.
Reply with JSON only, in this form:
{"steps": [{"id": "s1", "description": "...", "worker": "<worker>", "depends_on": [], "check": null}]}
Use at most {max_steps} steps. If nothing needs doing, reply {"steps": []}."""

_WORKER = """\
Do the one step you are given, using your tools where they help, then reply with
the result of the step in plain words (facts, numbers, ids). Do not do other steps."""

_SYNTHESIZER = """\
Write the final answer to the goal from the results of the committed steps.
Be faithful to the results; do not invent facts they do not contain."""

# How a kept step its check rejected is marked in the committed lines (PlanVersions),
# and what a replan or round, and the synthesis, are told when one is there.
_REJECTED = "[rejected by its check"
_RETRY = (
    "A step marked rejected by its check is kept as evidence; list it again (its id) "
    "only to run it again."
)
_NOT_A_RESULT = (
    "A step marked rejected by its check did not hold: its output is evidence, "
    "not a result; do not give it as one."
)
# What a replan or round is told before the tool calls the steps that did not hold made.
CALLS_MADE = (
    "Tool calls of steps whose result did not hold took effect: plan them again only "
    "if they must run again (a step listed again makes its calls anew)."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Prompts:
    """Instructions for each role; override any of them.

    Attributes:
        planner: instructions for the planner (``{max_steps}`` is filled in).
        worker: default instructions for a worker that has no system prompt.
        synthesizer: instructions for the final answer.
        rejected_replan: the line a replan's or round's request has when a step its
            check rejected is among the committed ones (what listing it again does).
        rejected_answer: the line the synthesis request has then (its output is no
            result). A ``replan_request``, ``round_request`` or ``synthesis_request``
            of yours that leaves its line out gets it appended (place it yourself with
            ``self.rejected_replan`` / ``self.rejected_answer``; ``""``: none).
        calls_made: the line a replan's or round's request ends with when steps whose
            result did not hold (of the version it replaces, one that failed or that the
            replan cut in flight; one its check rejected, kept) made tool calls: a line
            per such step follows it, naming each call's tool, how it ended and its
            declared idempotency key.
            Appended whatever your request hooks write (``""``: none of it).
    """

    planner: str = _PLANNER
    worker: str = _WORKER
    synthesizer: str = _SYNTHESIZER
    rejected_replan: str = _RETRY
    rejected_answer: str = _NOT_A_RESULT
    # Not in the repr: a run's config hash has it only when set (so runs journaled before
    # it was added resume under a team that leaves it as it is; see _config_hash).
    calls_made: str = field(default=CALLS_MADE, repr=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Not super(): @dataclass(slots=True) made a new class, which the cell does not name.
        super(Prompts, cls).__init_subclass__(**kwargs)
        for name, method in list(vars(cls).items()):
            if name in _BUILDERS and callable(method) and not hasattr(method, "_stray_guard"):
                setattr(cls, name, _guarded(name, method))

    def planner_system(
        self,
        *,
        team: str,
        workers: Mapping[str, tuple[str, Sequence[str]]],
        checks: Mapping[str, str],
        max_steps: int,
    ) -> str:
        """The planner's system prompt: role line, instructions, workers, checks."""
        lines = [
            f"You are the planner of team '{team}'.",
            self.planner.replace("{max_steps}", str(max_steps)),
            "",
            "Workers:",
        ]
        for name, (description, tools) in workers.items():
            lines.append(f"- {name}: {description} Tools: {', '.join(tools) or 'none'}.")
        if checks:
            lines += [
                "",
                "Checks you may attach to a step (if its output fails the check, you replan):",
            ]
            lines += [f"- {name}: {doc}" for name, doc in checks.items()]
        return "\n".join(lines)

    def plan_request(self, goal: str, *, memory: str = "") -> str:
        """The first user message to the planner."""
        return f"Goal: {goal}" + (f"\n\n{memory}" if memory else "")

    def plan_problems(self, problems: Iterable[str]) -> str:
        """Re-prompt after an invalid plan, with the exact problems."""
        listed = "\n".join(f"- {p}" for p in problems)
        return f"That plan cannot be run:\n{listed}\nReply with the corrected plan as JSON only."

    def replan_request(
        self,
        *,
        goal: str,
        plan: Plan,
        committed: str,
        unfinished: Sequence[PlanStep],
        reason: str,
        next_id: int,
    ) -> str:
        """Ask for a new tail: committed steps stay as evidence, the unfinished ones are replaced.

        Args:
            committed: the committed results as prompt lines (see ``PlanVersions.committed_text``).
        """
        todo = "\n".join(f"- {s.id} [{s.worker or '-'}]: {s.description}" for s in unfinished)
        return (
            f"REPLAN. Goal: {goal}\n\n"
            f"Committed steps of plan version {plan.version} (kept; new steps may depend on them by id):\n{committed or '- none'}\n\n"
            f"{self._rejected(self.rejected_replan, committed)}"
            f"Why the plan must change: {reason}\n\n"
            f"Unfinished steps of version {plan.version}, which your reply replaces:\n{todo or '- none'}\n\n"
            f"Reply with the new steps only, as JSON. Number new ids from s{next_id}."
        )

    def round_request(
        self, *, goal: str, round: int, committed: str, feedback: str, next_id: int
    ) -> str:
        """Plan another round after the critic found the result short of the goal."""
        return (
            f"ROUND {round}. Goal: {goal}\n\n"
            f"Results so far (kept; new steps may depend on them by id):\n{committed or '- none'}\n\n"
            f"{self._rejected(self.rejected_replan, committed)}"
            f"The critic says the goal is not met yet: {feedback}\n\n"
            "Reply with only the additional steps that close the gap, as JSON "
            f'(or {{"steps": []}} if nothing more can be done). Number new ids from s{next_id}.'
        )

    def critic_system(self, *, team: str, instructions: str) -> str:
        """The critic's system prompt."""
        return f"You are the critic of team '{team}'.\n{instructions}"

    def critique_request(self, *, goal: str, round: int, committed: str) -> str:
        """What the critic judges."""
        return f"Goal: {goal}\n\nRound {round} committed results:\n{committed or '- none'}"

    def critique_retry(self) -> str:
        """Re-prompt after a critic reply that did not parse."""
        return 'That reply did not parse. Reply with JSON only: {"passed": true or false, "feedback": "..."}'

    def compressor_system(self, *, team: str, instructions: str) -> str:
        """The compressor's system prompt."""
        return f"You are the compressor of team '{team}'.\n{instructions}"

    def compress_request(self, *, committed: str, critique: str) -> str:
        """What to compress (the goal is kept verbatim elsewhere, so it is not sent)."""
        text = f"Committed step results:\n{committed}"
        return text + (f"\n\nLatest critique (kept as is): {critique}" if critique else "")

    def worker_system(self, *, worker: str, description: str, system_prompt: str) -> str:
        """A worker's system prompt."""
        return f"You are worker '{worker}': {description}\n\n{system_prompt or self.worker}"

    def step_request(self, *, step: PlanStep, context: StepContext) -> str:
        """The user message that hands one step to a worker."""
        # Made for every step: pieces joined once, no list of sections joined again.
        parts = [
            f"Goal of the run: {context.goal}\n\nPlan:\n{context.plan_outline}"
            f"\n\nYour step ({step.id}): {step.description}"
        ]
        if context.dependency_outputs:
            parts.append("\n\nResults of the steps it depends on:")
            for sid, out in context.dependency_outputs:  # a loop: this runs every step
                parts.append(f"\n- {sid}: {out}")
        if context.notes:
            parts.append(f"\n\n{context.notes}")
        return "".join(parts)

    def synthesizer_system(self, *, team: str) -> str:
        """The synthesizer's system prompt."""
        return f"You are the synthesizer of team '{team}'.\n{self.synthesizer}"

    def synthesis_request(self, *, goal: str, committed: str, artifacts: Sequence[str]) -> str:
        """The results to turn into one answer."""
        results = committed
        text = (
            f"Goal: {goal}\n\nCommitted step results:\n{results or '- none (nothing needed doing)'}"
        )
        text += self._rejected(self.rejected_answer, committed, before="\n\n", after="")
        if artifacts:
            text += f"\n\n{counted(len(artifacts), 'finished artefact')} will be appended verbatim after your text; do not repeat {'it' if len(artifacts) == 1 else 'them'}, introduce {'it' if len(artifacts) == 1 else 'them'}."
        return text

    @staticmethod
    def _rejected(line: str, committed: str, before: str = "", after: str = "\n\n") -> str:
        """``line`` (framed) if ``committed`` has a step its check rejected, else ``""``."""
        return f"{before}{line}{after}" if line and _REJECTED in committed else ""


def with_rejected(text: str, line: str, committed: str) -> str:
    """A request ``text`` a ``Prompts`` hook wrote from ``committed``, with ``line`` (see
    ``Prompts.rejected_replan``) appended if it needs it and the hook left it out."""
    if line and _REJECTED in committed and line not in text:
        return f"{text}\n\n{line}"
    return text


# The methods a run calls; a subclass's own are wrapped by ``Prompts.__init_subclass__``.
_BUILDERS = frozenset(
    name for name, value in vars(Prompts).items() if callable(value) and not name.startswith("_")
)


def _guarded(name: str, method: Callable[..., str]) -> Callable[..., str]:
    """``method`` with its failures named: an ``Exception`` becomes :class:`HookFailed`
    (naming the class and hook), so every hook that raises, wherever a run calls it,
    says which one it was; so does a stray ``BaseException`` of its own (asyncio's
    ``CancelledError`` that nothing cancelled, ``GeneratorExit``), which as raised would
    end the planner or worker task that called it (see :mod:`regiment._stray`). Real
    cancellations pass on as they are."""

    @functools.wraps(method)
    def call(self: Prompts, *args: Any, **kwargs: Any) -> str:
        try:
            text: object = method(self, *args, **kwargs)  # a user's hook may return anything
        except HookFailed:  # a super() call's, named already
            raise
        except BaseException as exc:
            if not users_failure(exc):
                raise  # a real cancellation, or an interrupt
            raise HookFailed(_hook_failed(self, name, raised(exc))) from exc
        if not isinstance(text, str):  # it would fail far from here ("expected str instance")
            what = f"returned the {type(text).__name__} {text!r:.100}, not the text (a str)"
            raise HookFailed(_hook_failed(self, name, what))
        return text

    call._stray_guard = True  # type: ignore[attr-defined]
    return call


def _hook_failed(prompts: Prompts, hook: str, what: str) -> str:
    return (
        f"the Prompts hook {type(prompts).__name__}.{hook} {what}; fix that method (it must "
        "return the text), or remove it to use regiment's default"
    )
