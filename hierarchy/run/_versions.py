"""The plan versions of one run: the current version, the committed steps, and
whether a report still belongs to the plan.

A replan makes a new version that keeps the committed steps and replaces the
unfinished tail; the committed reports stay here as evidence for every later
version. Only the planner actor touches this object, through its ``_record``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import final

import msgspec

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
    # The dropped reports that made tool calls (a step cut by a replan, in flight as its
    # version was replaced): the replan's request lists their calls (``_made_calls``).
    cut: tuple[StepReport, ...] = ()
    # Kept steps whose check rejected their report: step id -> why, told with its output.
    rejected: dict[str, str] = field(default_factory=dict)
    version: int = 0  # the current version's number (0 before the first plan)
    # The current version's steps by id, built once per version; and its outline, once
    # ``outline()`` made it ("" until then: a fan-out reads it with no call, #22).
    _index: dict[str, PlanStep] = field(default_factory=dict)
    outline_made: str = ""
    _open: int = 0  # the current version's steps not yet committed

    @property
    def plan(self) -> Plan:
        return self.plans[-1]

    def adopt(self, plan: Plan, added: Sequence[PlanStep] = ()) -> frozenset[str]:
        """Make ``plan`` the current version (``added``: its new steps); the ids of the
        rejected steps it runs again (see :meth:`retry`)."""
        again = self.retry(added) if self.rejected else frozenset()
        self.plans.append(plan)
        self.version = plan.version
        self._index = {step.id: step for step in plan.steps}
        self.outline_made = ""
        self._open = len(self._index.keys() - self.committed.keys())
        return again

    def commit(self, report: StepReport) -> None:
        """Record ``report`` as its step's committed result (or its evidence, for a
        step whose check rejected it)."""
        step_id = report.step_id
        if step_id not in self.committed and step_id in self._index:
            self._open -= 1
        self.committed[step_id] = report

    def drop(self, report: StepReport) -> None:
        """``report`` is stale (its version replaced, or being replaced): never applied;
        kept only for the tool calls it made."""
        self.stale_dropped += 1
        if report.tool_outcomes:
            self.cut += (report,)

    def reject(self, report: StepReport, check: str, reason: str) -> None:
        """Keep ``report`` as the evidence of a step its check rejected: later steps and
        the answer see its output with that said, never as a result that held."""
        self.commit(report)
        self.rejected[report.step_id] = f"rejected by its check '{check}': {reason}"

    def held(self) -> tuple[str, ...]:
        """The committed steps whose result held (not those their check rejected)."""
        rejected = self.rejected
        if not rejected:
            return tuple(self.committed)
        return tuple([sid for sid in self.committed if sid not in rejected])

    def held_by(self, step_id: str) -> bool:
        """Whether ``step_id`` is committed and its result held."""
        return step_id in self.committed and step_id not in self.rejected

    def retry(self, steps: Sequence[PlanStep]) -> frozenset[str]:
        """Of ``steps`` (a new version's added steps), the ids of steps its check rejected:
        their evidence is let go (the old report stays in ``reports``), so each runs again
        and the steps that depend on it wait for its new result."""
        again = frozenset([s.id for s in steps if s.id in self.rejected])
        for step_id in again:
            del self.committed[step_id], self.rejected[step_id]
        memory = self.memory
        if again and memory is not None and again & memory.facts.keys():
            facts = {sid: f for sid, f in memory.facts.items() if sid not in again}
            self.memory = msgspec.structs.replace(memory, facts=facts)
        return again

    def outputs_told(self) -> str:
        """Each kept step's output as a line, ``<id>: <output>`` (a rejected one's says so)."""
        return "\n".join(
            [f"{sid}: {self.told(sid, r.output)}" for sid, r in self.committed.items()]
        )

    def told(self, step_id: str, output: str) -> str:
        """``output`` of a kept step as it is told: a rejected step's says so."""
        why = self.rejected.get(step_id)
        return output if why is None else f"[{why}] {output}"

    def step(self, step_id: str) -> PlanStep:
        """The current plan's step with this id (``KeyError`` naming the steps if none)."""
        found = self._index.get(step_id)
        return found if found is not None else self.plan.step(step_id)

    def all_committed(self) -> bool:
        """Whether every step of the current version is committed."""
        return not self._open

    def outline(self) -> str:
        """The current plan as prompt lines."""
        if not self.outline_made:
            self.outline_made = self.plan.outline()
        return self.outline_made

    def carried_output(self, step_id: str) -> str:
        """A committed step's result as later steps see it: its facts once the
        context has been compressed, else its full output; a rejected step's says so."""
        if self.memory is not None and step_id in self.memory.facts:
            output = self.memory.facts[step_id]
        else:
            output = self.committed[step_id].output
        return self.told(step_id, output)

    def carried_outputs(self, step_ids: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """:meth:`carried_output` of each of ``step_ids``, as a step's context carries them."""
        if not step_ids:
            return ()
        if self.memory is None and not self.rejected:
            committed = self.committed
            carried: list[
                tuple[str, str]
            ] = []  # a plain loop: a comprehension is a frame of its own (#22)
            for d in step_ids:
                carried.append((d, committed[d].output))
            return tuple(carried)
        return tuple([(d, self.carried_output(d)) for d in step_ids])

    def committed_text(self) -> str:
        """The committed results as prompt lines, ``- <id> (<description>): <result>``.

        Once the context has been compressed, a step's line carries its facts from
        the working memory; steps committed since then carry their full output. A step
        its check rejected says so: ``- <id> (<description>) [rejected by its check ...]``.
        """
        described, rejected = self._descriptions(), self.rejected
        facts = {} if self.memory is None else self.memory.facts  # what carried_output reads
        lines: list[str] = []  # one string a line, made once (a run's tail, #22 row 4)
        for sid, report in self.committed.items():
            said, what = facts.get(sid, report.output), described.get(sid, "")
            if sid in rejected:
                lines.append(f"- {sid} ({what}) [{rejected[sid]}]: {said}")
            else:
                lines.append(f"- {sid} ({what}): {said}")
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
