"""What a run returns."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, TypeVar

import msgspec

from regiment._text import shown
from regiment.hierarchy import events as _events
from regiment.hierarchy._critic import Verdict
from regiment.hierarchy._memory import WorkingMemory
from regiment.hierarchy._messages import BudgetLimit, StepReport
from regiment.hierarchy.events import Event
from regiment.hierarchy.events import _run as _run_events
from regiment.hierarchy.plan._plan import Plan
from regiment.models import Usage
from regiment.tools import ApprovalRequest

__all__ = ("RunResult", "RunStatus", "with_output")

_T = TypeVar("_T")

RunStatus: TypeAlias = Literal["completed", "partial", "cancelled", "paused"]


class RunResult(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """The outcome of one run.

    Attributes:
        run_id: the run's id.
        goal: the goal, verbatim.
        answer: the synthesised answer (artefacts kept verbatim at its end).
        status: ``completed``; ``partial`` when a budget ran out first (see
            ``budget_exhausted``); ``cancelled``; ``paused`` when nothing could go
            on without a decision on ``pending_approvals``.
        plans: every plan version, oldest first.
        steps: every report that reached the planner for a current version,
            in arrival order (committed and rejected ones have status ``done``).
        committed: ids of the committed steps, in commit order: the steps whose result
            held (a step its check rejected is not one: see ``rejected``).
        rejected: ids of the steps whose check rejected their output, in the order
            judged. Each is kept as evidence (its report is in ``steps``, the reason in
            its ``CheckFailed`` event): later steps and the answer are told its output
            as rejected. A replan that lists one again runs it again: once its new
            report holds it is committed, and no longer here.
        artifacts: finished artefacts produced by steps, verbatim.
        usage_by_role: usage per role (``planner``, ``synthesizer``, each worker name).
        usage: total usage.
        estimated_usage: the part of ``usage`` that is an estimate, not a provider's
            figure: model calls whose usage never came back (cut in flight by a replan,
            a cancel, a sibling's failure or the wall clock; lost with a Ray replica; in
            flight at a crash, on resume), each counted at the most it could have spent
            (its estimated input, its ``max_tokens`` as output, their cost).
        model_calls: total model calls.
        tool_calls: total tool calls the run's budget let through to a tool: those
            whose body ran, and those stopped after that (arguments that did not
            validate, a guard, a denial or a pause for approval, a token budget);
            calls refused for want of a tool-call share are not counted.
        stale_reports_dropped: reports for older plan versions that were dropped.
        budget_exhausted: which limit ran out, if any.
        trace_id: the OpenTelemetry trace id (hex), if tracing recorded the run.
        rounds: how many rounds ran (more than one only with a critic).
        verdicts: the critic's verdict on each round, oldest first.
        memory: the working memory, if the carried context was compressed.
        pending_approvals: the requests a paused run waits for
            (``RunningTeam.approve``, then resume).
        events: every event of the run, in order: the ones ``stream`` yields,
            up to the closing ``RunCompleted`` (which carries this result).
        output: (a property) with ``Team(output_type=...)``, the validated answer.

    A structured answer lives twice: ``answer`` is its JSON text, ``output`` the
    validated instance. Only ``answer`` is encoded (``to_json``, the journal, the
    service): a pydantic instance is no msgspec value. Decoding rebuilds
    ``output`` when told the type: ``result_from_json(data, output_type=Model)``.
    """

    run_id: str
    goal: str
    answer: str
    status: RunStatus
    plans: tuple[Plan, ...]
    steps: tuple[StepReport, ...]
    committed: tuple[str, ...]
    rejected: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    usage_by_role: dict[str, Usage] = {}
    usage: Usage = Usage()
    model_calls: int = 0
    tool_calls: int = 0
    stale_reports_dropped: int = 0
    budget_exhausted: BudgetLimit | None = None
    trace_id: str | None = None
    rounds: int = 1
    verdicts: tuple[Verdict, ...] = ()
    memory: WorkingMemory | None = None
    pending_approvals: tuple[ApprovalRequest, ...] = ()
    events: tuple[Event, ...] = ()
    estimated_usage: Usage = Usage()

    @property
    def output(self) -> Any:
        """The validated structured answer (``Team(output_type=...)``), else ``None``.

        ``output_as(Model)`` gives it typed.
        """
        return self.__dict__.get("output")

    def output_as(self, kind: type[_T]) -> _T:
        """``output``, checked to be a ``kind`` (typed for type checkers).

        Raises:
            TypeError: there is no structured answer, or it is not a ``kind``.
        """
        found = self.output
        if not isinstance(found, kind):
            raise TypeError(
                f"run {self.run_id}: output is {type(found).__name__}, not {kind.__name__}; "
                f"give the team output_type={kind.__name__} (status: {self.status})"
            )
        return found

    def as_failed(self, error_type: str, message: str) -> _events.RunFailed:
        """A ``RunFailed`` (``error_type``, ``message``) carrying what this run got to: its
        plans, step reports, committed and rejected steps, usage, model and tool calls, the budget limit
        that ran out and the trace id. E.g. the last event a reader that left a run early
        reports for it, from the ``RunCompleted`` (status ``cancelled``) it did not read."""
        return _events.RunFailed(
            run_id=self.run_id,
            error_type=error_type,
            message=message,
            plans=self.plans,
            steps=self.steps,
            committed=self.committed,
            rejected=self.rejected,
            usage=self.usage,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            budget_exhausted=self.budget_exhausted,
            trace_id=self.trace_id,
            estimated_usage=self.estimated_usage,
        )

    @property
    def plan(self) -> Plan:
        """The last plan version."""
        return self.plans[-1]

    def output_of(self, step_id: str) -> str:
        """The committed output of a step.

        Raises:
            KeyError: the step was not committed (its check rejected it, say).
        """
        if step_id in self.rejected:
            raise KeyError(
                f"step {step_id!r} was rejected by its check (see its CheckFailed event); "
                f"its report, kept as evidence, is in steps; committed: {', '.join(self.committed)}"
            )
        for report in self.steps:
            if report.step_id == step_id and report.status == "done":
                return report.output
        raise KeyError(
            f"step {step_id!r} was not committed; committed: {', '.join(self.committed)}"
        )

    def __repr__(self) -> str:  # an answer and its steps may be long: RunResult's fields have them
        return (
            f"RunResult(run_id={self.run_id!r}, status={self.status!r}, answer={shown(self.answer)}, "
            f"plans={len(self.plans)}, steps={len(self.steps)}, model_calls={self.model_calls}, "
            f"tool_calls={self.tool_calls}, usage={self.usage!r})"
        )


# The run's events name RunResult (in RunCompleted) only for type checkers, since this module
# imports them; reading RunCompleted's fields (msgspec decoding, help()) needs the name there.
vars(_run_events).setdefault("RunResult", RunResult)


def with_output(result: RunResult, output: object) -> RunResult:
    """``result`` with ``output`` attached (kept out of its encoding)."""
    result.__dict__["output"] = output
    return result
