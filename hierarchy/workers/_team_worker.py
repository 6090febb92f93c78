"""A whole team serving as one worker of a parent team (depth > 1).

The parent's planner assigns a step to a :class:`TeamWorker` like to any
worker. The team-worker actor turns the step into one run of the child team
(started in the same actor system as the parent) and turns that run's outcome
into the step's one ``StepReport``:

* budget flows down: the child run's budget is the child team's budget capped
  by the step's ``StepAllowance``;
* cancellation flows down: a ``CancelStep`` cancels the step's scope, which
  cancels the child run, which cancels the child's in-flight steps; a pause
  flows down alike (the child run ends ``paused``, its waiting calls not
  called off);
* plan versions are per team: the child has its own versions, and a stale
  report at either level is dropped by that level's planner;
* tracing: the child run's root span is a child of this worker's
  ``invoke_agent {name}`` span, so a nested run is one trace;
* durability: when the parent run is journaled, the child run is journaled in the
  same journal under an id derived from the step (``journal.nested_run_id``), and a
  resumed parent resumes it rather than starting it afresh (see ``_nested_runs``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, assert_never, final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from regiment.errors import ClusterLost, ConfigError, RunCancelled
from regiment.hierarchy._approvals import StepAt
from regiment.hierarchy._messages import AssignStep, StepAllowance, StepReport
from regiment.hierarchy._ranges import seconds
from regiment.hierarchy._result import RunResult
from regiment.hierarchy.events import Event
from regiment.hierarchy.run._channel import RunChannel, RunEnd
from regiment.hierarchy.workers._failed import failed_report
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._worker import check_worker_description, check_worker_name
from regiment.telemetry import Telemetry, semconv

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team

__all__ = ("DEFAULT_TEAM_STEP_MODEL_CALLS", "OpenChildRun", "TeamWorker", "TeamWorkerActor")

DEFAULT_TEAM_STEP_MODEL_CALLS = 64
"""Model calls a parent reserves for one step of a sub-team whose budget sets no
``model_calls`` limit: room for a plan, a replan, synthesis and several
multi-call steps. Set ``Budget(model_calls=...)`` on the child team to change it."""

OpenChildRun: TypeAlias = Callable[
    [str, StepAllowance, StepAt, int],
    AbstractAsyncContextManager[tuple[RunChannel, MemoryObjectReceiveStream[Event] | RunEnd]],
]
"""Starts (or, for a journaled run above, resumes) the child team's run of one attempt
of a step under an allowance; yields its channel and events.

When the block exits (even by cancellation) the run has ended or been given up
on, and the channel holds its result or error, if it got one."""


@final
@dataclass(frozen=True, kw_only=True)
class TeamWorker:
    """A team used as a worker of another team.

    Attributes:
        name: how the parent's plans refer to it (letters, digits, ``_`` and ``-``).
        description: what the sub-team is good at; the parent's planner reads this.
        team: the child team; it is started with the parent and plans its own steps.
        artifact: its answers are finished artefacts, kept verbatim by the parent's synthesis.
        step_timeout: seconds one of its steps (one run of the child team) may take
            before it ends as ``timed_out``, as a :class:`Worker`'s step does: the child
            run is cancelled (its own steps, model calls and tool calls with it) and
            ends ``cancelled``, and what it spent counts. Finite, > 0; ``None`` (the
            default): no limit but the child team's own ``Budget(wall_clock=...)``.
    """

    name: str
    description: str
    team: Team
    artifact: bool = False
    step_timeout: float | None = None

    def __post_init__(self) -> None:
        check_worker_name(self.name)
        check_worker_description(self.name, self.description)
        seconds(f"worker {self.name!r}", "step_timeout", self.step_timeout)
        from regiment.hierarchy._team import Team  # loaded: a TeamWorker is made of one

        team: object = self.team  # what the caller gave, whatever its annotation says
        if not isinstance(team, Team):  # else a run failed on it (an AttributeError)
            kind, called = type(team).__name__, getattr(team, "name", None)
            got = f"the {kind} {called!r}" if isinstance(called, str) else f"the {kind}"
            got = "None" if team is None else got
            raise ConfigError(
                f"worker {self.name!r}: team must be a Team(...) for the worker to serve as; "
                f"got {got}"
            )

    @property
    def capabilities(self) -> tuple[str, ...]:
        """The child team's worker names: what the parent's planner is told it can do."""
        return tuple(w.name for w in self.team.workers)

    @property
    def step_model_calls(self) -> int:
        """The child's ``Budget.model_calls`` if set, else ``DEFAULT_TEAM_STEP_MODEL_CALLS``."""
        limit = self.team.budget.model_calls
        return DEFAULT_TEAM_STEP_MODEL_CALLS if limit is None else limit

    def __repr__(self) -> str:
        return f"TeamWorker({self.name!r}, team={self.team.name!r})"


def child_goal(parent_team: str, assign: AssignStep) -> str:
    """The child run's goal: the step, then the parent's goal and the results it builds on."""
    context = assign.context
    parts = [
        assign.step.description,
        f"This is step {assign.step.id} of a plan by team '{parent_team}' "
        f"for the goal: {context.goal}",
    ]
    if context.dependency_outputs:
        parts.append(
            "Results it builds on:\n"
            + "\n".join(f"- {sid}: {out}" for sid, out in context.dependency_outputs)
        )
    if context.notes:
        parts.append(context.notes)
    return "\n\n".join(parts)


class TeamWorkerActor(StepActor):
    """Runs each step assigned to a :class:`TeamWorker` as one run of its child team."""

    def __init__(
        self,
        worker: TeamWorker,
        parent_team: str,
        open_run: OpenChildRun,
        telemetry: Telemetry,
    ) -> None:
        super().__init__(
            worker.name,
            telemetry,
            step_timeout=worker.step_timeout,
            span_attributes={semconv.GEN_AI_AGENT_DESCRIPTION: worker.description},
        )
        self._worker = worker
        self._parent_team = parent_team
        self._open_run = open_run

    async def work(self, assign: AssignStep, progress: StepProgress) -> StepReport:
        """Run the child team on the step; its result (or error) becomes the report."""
        goal = child_goal(self._parent_team, assign)
        channel: RunChannel | None = None
        try:
            # Opened inside this step's span, so the child's root span is its child.
            parent = StepAt(assign.run_id, assign.plan_version, assign.step.id)
            opened = self._open_run(goal, assign.allowance, parent, assign.attempt)
            async with opened as (channel, events):
                progress.on_cut = channel.cut  # the child's steps are cut with this step
                try:
                    async for _ in events:
                        pass
                except anyio.get_cancelled_exc_class():
                    # Cut by its run's pause: the child pauses too (its waiting calls
                    # were not called off), rather than being cancelled.
                    channel.pausing = progress.awaiting = progress.paused
                    raise
        finally:
            # Also when cancelled: the child has wound down by now, and what it
            # spent must reach the parent's ledger with the cancelled report.
            if channel is not None and channel.result is not None:
                _absorb(progress, channel.result)
            elif channel is not None and channel.tally is not None:  # the child run failed
                _spent(progress, channel.tally)
        return self._report(assign, progress, channel)

    def _report(
        self, assign: AssignStep, progress: StepProgress, channel: RunChannel
    ) -> StepReport:
        name, team = self._worker.name, self._worker.team.name
        result, error = channel.result, channel.error
        if result is None:
            error = error or RunCancelled(f"the run of team '{team}' ended without a result")
            if isinstance(error.__cause__, ClusterLost):  # its Ray cluster went: so does ours
                return failed_report(progress, assign, name, _cluster_lost(team, error))
            if not isinstance(error, RunCancelled):
                return failed_report(progress, assign, name, error, f"team '{team}': ")
            return progress.report(
                assign, name, "cancelled", error=f"team '{team}': {type(error).__name__}: {error}"
            )
        match result.status:
            case "completed":
                return progress.report(assign, name, "done")
            case "partial":
                return progress.report(
                    assign,
                    name,
                    "budget_exhausted",
                    error=f"team '{team}' ran out of budget ({result.budget_exhausted})",
                    exhausted=result.budget_exhausted,
                )
            case "cancelled" | "paused":  # a nested run pauses only with the step it serves
                return progress.report(assign, name, "cancelled", error=result.answer)
            case _:
                assert_never(result.status)


def _cluster_lost(team: str, error: BaseException) -> ClusterLost:
    """The step's error when its child run stopped because its Ray cluster went away:
    ``ClusterLost`` too, so the parent run stops unfinished (resumable when journaled,
    its resume resuming the child's run) rather than failing for good."""
    return ClusterLost(f"team '{team}': {error.__cause__}")


def _absorb(progress: StepProgress, result: RunResult) -> None:
    """Carry the child run's spend and facts into the step's progress."""
    _spent(progress, result)
    progress.last_text = result.answer
    committed = set(result.committed)
    progress.tool_outcomes = [
        outcome
        for report in result.steps
        if report.step_id in committed and report.status == "done"
        for outcome in report.tool_outcomes
    ]


def _spent(progress: StepProgress, result: RunResult) -> None:
    """Carry what the child run spent into the step's progress; also of a child run that
    failed (its planner never gave a valid plan, say), whose calls were made and paid
    for all the same (``RunChannel.tally``)."""
    progress.usage = result.usage
    # of it, what the child run charged at the most (its calls cut in flight): an estimate
    progress.estimated = result.estimated_usage
    progress.model_calls = result.model_calls
    progress.tool_calls = result.tool_calls
