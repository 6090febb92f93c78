"""The plan versions of one run: the current version, the committed steps, and
whether a report still belongs to the plan.

A replan makes a new version that keeps the committed steps and replaces the
unfinished tail; the committed reports stay here as evidence for every later
version. Only the planner actor touches this object, through its ``_record``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

from regiment.hierarchy._memory import WorkingMemory
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy.plan._plan import Plan, PlanStep

__all__ = ("PlanVersions",)


@final
@dataclass(slots=True)
class PlanVersions:
    """Every plan version of a run, and what has been committed against them."""

    plans: list[Plan] = field(default_factory=list)
    committed: dict[str, StepReport] = field(default_factory=dict)
    reports: list[StepReport] = field(default_factory=list)  # applied, in arrival order
    artifacts: list[str] = field(default_factory=list)
    memory: WorkingMemory | None = None
    stale_dropped: int = 0
    # Kept steps whose check rejected their report: step id -> why, told with its output.
    rejected: dict[str, str] = field(default_factory=dict)
    version: int = 0  # the current version's number (0 before the first plan)
    # The current version's steps by id and its outline, built once per version.
    _index: dict[str, PlanStep] = field(default_factory=dict)
    _outline: str = ""
    _open: int = 0  # the current version's steps not yet committed

    @property
    def plan(self) -> Plan:
        return self.plans[-1]

    def adopt(self, plan: Plan) -> None:
        """Make ``plan`` the current version."""
        self.plans.append(plan)
        self.version = plan.version
        self._index = {step.id: step for step in plan.steps}
        self._outline = ""
        self._open = len(self._index.keys() - self.committed.keys())

    def commit(self, report: StepReport) -> None:
        """Record ``report`` as its step's committed result (or its evidence, for a
        step whose check rejected it)."""
        step_id = report.step_id
        if step_id not in self.committed and step_id in self._index:
            self._open -= 1
        self.committed[step_id] = report

    def reject(self, report: StepReport, check: str, reason: str) -> None:
        """Keep ``report`` as the evidence of a step its check rejected: later steps and
        the answer see its output with that said, never as a result that held."""
        self.commit(report)
        self.rejected[report.step_id] = f"rejected by its check '{check}': {reason}"

    def step(self, step_id: str) -> PlanStep:
        """The current plan's step with this id (``KeyError`` naming the steps if none)."""
        found = self._index.get(step_id)
        return found if found is not None else self.plan.step(step_id)

    def all_committed(self) -> bool:
        """Whether every step of the current version is committed."""
        return not self._open

    def outline(self) -> str:
        """The current plan as prompt lines."""
        if not self._outline:
            self._outline = self.plan.outline()
        return self._outline

    def carried_output(self, step_id: str) -> str:
        """A committed step's result as later steps see it: its facts once the
        context has been compressed, else its full output; a rejected step's says so."""
        if self.memory is not None and step_id in self.memory.facts:
            output = self.memory.facts[step_id]
        else:
            output = self.committed[step_id].output
        if step_id in self.rejected:
            return f"[{self.rejected[step_id]}] {output}"
        return output

    def carried_outputs(self, step_ids: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """:meth:`carried_output` of each of ``step_ids``, as a step's context carries them."""
        if not step_ids:
            return ()
        if self.memory is None and not self.rejected:
            committed = self.committed
            return tuple([(d, committed[d].output) for d in step_ids])
        return tuple([(d, self.carried_output(d)) for d in step_ids])

    def committed_text(self) -> str:
        """The committed results as prompt lines, ``- <id> (<description>): <result>``.

        Once the context has been compressed, a step's line carries its facts from
        the working memory; steps committed since then carry their full output. A step
        its check rejected says so: ``- <id> (<description>) [rejected by its check ...]``.
        """
        described, rejected = self._descriptions(), self.rejected
        facts = {} if self.memory is None else self.memory.facts  # what carried_output reads
        lines = [
            f"- {sid} ({described.get(sid, '')})"
            + (f" [{rejected[sid]}]" if sid in rejected else "")
            + f": {facts.get(sid, report.output)}"
            for sid, report in self.committed.items()
        ]
        if self.memory is not None and self.memory.open_questions:
            lines.append("Open questions: " + "; ".join(self.memory.open_questions))
        return "\n".join(lines)

    def _descriptions(self) -> dict[str, str]:
        """Each step id's description in the newest version that has the step."""
        return {step.id: step.description for plan in self.plans for step in plan.steps}

    def next_step_number(self) -> int:
        """One more than the highest ``sN`` id used by any version, so new ids never collide."""
        highest = 0
        for plan in self.plans:
            for step in plan.steps:
                if step.id[:1] == "s" and step.id[1:].isdigit():
                    highest = max(highest, int(step.id[1:]))
        return highest + 1
