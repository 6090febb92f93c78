"""Plans and their versions: immutable values the planner replaces, never edits.

A :class:`Plan` is one version of the planner's intent. When an observation
disproves the rest of it, the planner makes the next version with
:meth:`Plan.with_tail`: the committed steps stay as evidence, the unfinished
tail is replaced, and the old version is left exactly as it was (it is still
what older reports refer to).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import msgspec

__all__ = ("Plan", "PlanStep")


class PlanStep(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a plan.

    Attributes:
        id: the step's id, unique within a run (``s1``, ``s2``, ... when the
            planner model gave none).
        description: what the step must do, in the planner's words.
        worker: the worker that does it; ``None`` means the team's only worker.
        depends_on: ids of the steps whose committed outputs this one needs.
        check: name of a registered check (a plain predicate over the step's
            output) that must pass before the step is committed.
    """

    id: str
    description: str
    worker: str | None = None
    depends_on: tuple[str, ...] = ()
    check: str | None = None


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """One version of a run's plan.

    Attributes:
        version: 1 for the first plan, one more for each replan.
        steps: the steps in plan order.
        parent_version: the version this one replaced, if any.
        reason: why this version exists (``"initial"``, or the replan's reason).
        truncated_from: how many steps the planner's reply had, when it had more
            than the allowed maximum and was cut.
    """

    version: int
    steps: tuple[PlanStep, ...]
    parent_version: int | None = None
    reason: str = ""
    truncated_from: int | None = None

    @property
    def is_empty(self) -> bool:
        """Whether the plan has no steps (nothing needs doing)."""
        return not self.steps

    @property
    def ids(self) -> tuple[str, ...]:
        """The step ids, in plan order."""
        return tuple(step.id for step in self.steps)

    def step(self, step_id: str) -> PlanStep:
        """The step with this id.

        Raises:
            KeyError: the plan has no such step (the message lists its steps).
        """
        for step in self.steps:
            if step.id == step_id:
                return step
        known = ", ".join(self.ids) or "none"
        raise KeyError(
            f"plan version {self.version} has no step {step_id!r}; its steps are: {known}"
        )

    def ready(self, committed: Collection[str], running: Collection[str]) -> tuple[PlanStep, ...]:
        """Steps that can be dispatched now, in plan order.

        A step is ready when every step it depends on is committed and it is
        itself neither committed nor running.

        Args:
            committed: ids of the committed steps.
            running: ids of the steps dispatched and not yet reported.
        """
        return tuple(
            step
            for step in self.steps
            if step.id not in committed
            and step.id not in running
            and all(dep in committed for dep in step.depends_on)
        )

    def with_tail(
        self,
        *,
        keep: Collection[str],
        new_steps: Sequence[PlanStep],
        reason: str,
        truncated_from: int | None = None,
    ) -> Plan:
        """The next version: the kept steps (in plan order), then the new ones.

        This plan is not changed; the result has ``version + 1`` and names this
        version as its parent.

        Args:
            keep: ids of the steps to keep (usually the committed ones).
            new_steps: the replacement tail, already parsed and validated.
            reason: why the plan changed, e.g. the check that failed.
            truncated_from: how many steps the replan's reply had, when it was cut
                to ``Planner.max_steps`` (the parent's own record is not carried over).

        Raises:
            KeyError: ``keep`` names a step this plan does not have.
        """
        for step_id in keep:
            self.step(step_id)  # an unknown id is the caller's bug: say so now
        kept = tuple(step for step in self.steps if step.id in keep)
        return Plan(
            version=self.version + 1,
            steps=kept + tuple(new_steps),
            parent_version=self.version,
            reason=reason,
            truncated_from=truncated_from,
        )

    def outline(self) -> str:
        """The plan as text, one step per line, for prompts and logs.

        Example line: ``s2 [billing] Issue the refund (after s1; check: refund_issued)``.
        """
        # Made for every plan a run adopts: a plain loop with each step's line made here
        # (a function a step and a comprehension frame were one call a step more, #22),
        # one f-string per case, no list per line.
        lines: list[str] = []
        for step in self.steps:
            worker, deps, check = step.worker, step.depends_on, step.check
            head = (
                f"{step.id} [{worker}] {step.description}"
                if worker
                else f"{step.id} {step.description}"
            )
            if not check:
                lines.append(f"{head} (after {', '.join(deps)})" if deps else head)
            elif deps:
                lines.append(f"{head} (after {', '.join(deps)}; check: {check})")
            else:
                lines.append(f"{head} (check: {check})")
        return "\n".join(lines)
