"""The bookkeeping of one run, kept apart from the actor that drives it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from regiment.errors import RunError
from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._critic import Verdict
from regiment.hierarchy._events import Event, RunCompleted, RunFailed
from regiment.hierarchy._memory import WorkingMemory
from regiment.hierarchy._messages import StepReport
from regiment.hierarchy._plan import Plan, PlanStep
from regiment.hierarchy._result import RunResult, RunStatus
from regiment.models import Usage

__all__ = ("RunChannel", "RunState")

_NONE_RUNNING: dict[str, int] = {}


@dataclass(slots=True)
class RunChannel:
    """Carries a run's events to its caller, and the error that ended it, if any."""

    send: MemoryObjectSendStream[Event]
    error: RunError | None = None
    result: RunResult | None = None
    done: bool = False
    streaming: bool = True

    @classmethod
    def open(cls, *, streaming: bool) -> tuple[RunChannel, MemoryObjectReceiveStream[Event]]:
        """A channel and the stream its events arrive on.

        Args:
            streaming: whether anyone reads the events as they happen; when not
                (``run()``), nothing is sent and the stream only closes at the end.
        """
        # Unbounded: the planner must never block on a slow reader of events.
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        return cls(send, streaming=streaming), receive

    def close(self, event: Event) -> None:
        """Deliver the run's last event and close the stream."""
        self.emit(event)
        self.done = True
        self.send.close()

    def emit(self, event: Event) -> None:
        """Deliver an event; a reader that has gone away is not an error."""
        if not self.streaming:
            return
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.send.send_nowait(event)


@dataclass(slots=True)
class RunState:
    """Everything a run has planned, committed and spent."""

    run_id: str
    goal: str
    ledger: BudgetLedger
    plans: list[Plan] = field(default_factory=list)
    reports: list[StepReport] = field(default_factory=list)
    committed: dict[str, StepReport] = field(default_factory=dict)
    inflight: dict[tuple[int, str, int], str] = field(
        default_factory=dict
    )  # (version, step, attempt) -> worker
    artifacts: list[str] = field(default_factory=list)
    usage_by_role: dict[str, Usage] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    stale_dropped: int = 0
    refused_tool_calls: int = 0  # refused for want of a step's tool-call share
    exhausted: BudgetLimit | None = None
    trace_id: str | None = None
    round: int = 1
    verdicts: list[Verdict] = field(default_factory=list)
    memory: WorkingMemory | None = None
    _outline: tuple[int, str] = (0, "")
    # inflight's step ids per plan version, with how many attempts of each are out
    _running: dict[int, dict[str, int]] = field(default_factory=dict)
    # The current version's steps by id, and those neither committed nor dispatched
    # yet (in plan order): kept so a report costs no pass over the whole plan.
    _index: tuple[int, dict[str, PlanStep]] = (0, {})
    _waiting: tuple[int, dict[str, PlanStep]] = (0, {})

    @property
    def plan(self) -> Plan:
        return self.plans[-1]

    @property
    def version(self) -> int:
        return self.plans[-1].version if self.plans else 0

    def charge(self, role: str, usage: Usage, *, model_calls: int, tool_calls: int = 0) -> None:
        """Record spending by a role (planner, synthesizer, or a worker)."""
        self.ledger.charge(usage=usage, model_calls=model_calls, tool_calls=tool_calls)
        self.usage_by_role[role] = self.usage_by_role.get(role, Usage()) + usage

    def running_ids(self, version: int) -> Collection[str]:
        """Ids of the steps of ``version`` dispatched and not yet reported (read only)."""
        return self._running.get(version, _NONE_RUNNING)

    def step(self, step_id: str) -> PlanStep:
        """The current plan's step with this id (``KeyError`` naming the steps if none)."""
        version, index = self._index
        if version != self.version:
            index = {step.id: step for step in self.plan.steps}
            self._index = (self.version, index)
        found = index.get(step_id)
        return found if found is not None else self.plan.step(step_id)

    def ready(self) -> list[PlanStep]:
        """The current plan's steps that can be dispatched now, in plan order: not
        committed, not dispatched, and every dependency committed."""
        committed = self.committed
        version, waiting = self._waiting
        if version != self.version:
            running = self.running_ids(self.version)
            waiting = {
                s.id: s for s in self.plan.steps if s.id not in committed and s.id not in running
            }
            self._waiting = (self.version, waiting)
        return [
            step for step in waiting.values() if all(dep in committed for dep in step.depends_on)
        ]

    def dispatched(self, version: int, step_id: str, attempt: int, worker: str) -> None:
        """Record a step sent to ``worker``."""
        self.inflight[(version, step_id, attempt)] = worker
        if self._waiting[0] == version:
            self._waiting[1].pop(step_id, None)
        running = self._running.setdefault(version, {})
        running[step_id] = running.get(step_id, 0) + 1

    def reported(self, version: int, step_id: str, attempt: int) -> None:
        """Record that a dispatched step has reported (or will never report)."""
        if self.inflight.pop((version, step_id, attempt), None) is None:
            return
        running = self._running[version]
        if running[step_id] == 1:
            del running[step_id]
        else:
            running[step_id] -= 1

    def outline(self) -> str:
        """The current plan as prompt lines (built once per version)."""
        if self._outline[0] != self.version:
            self._outline = (self.version, self.plan.outline())
        return self._outline[1]

    def carried_output(self, step_id: str) -> str:
        """A committed step's result as later steps see it: its facts once the
        context has been compressed, else its full output."""
        if self.memory is not None and step_id in self.memory.facts:
            return self.memory.facts[step_id]
        return self.committed[step_id].output

    def committed_text(self) -> str:
        """The committed results as prompt lines, ``- <id> (<description>): <result>``.

        Once the context has been compressed, a step's line carries its facts from
        the working memory; steps committed since then carry their full output.
        """
        lines = []
        for sid in self.committed:
            lines.append(f"- {sid} ({self._description(sid)}): {self.carried_output(sid)}")
        if self.memory is not None and self.memory.open_questions:
            lines.append("Open questions: " + "; ".join(self.memory.open_questions))
        return "\n".join(lines)

    def _description(self, step_id: str) -> str:
        for plan in reversed(self.plans):
            for step in plan.steps:
                if step.id == step_id:
                    return step.description
        return ""

    @property
    def last_feedback(self) -> str:
        return self.verdicts[-1].feedback if self.verdicts else ""

    def next_step_number(self) -> int:
        """One more than the highest ``sN`` id used by any version, so new ids never collide."""
        highest = 0
        for plan in self.plans:
            for step in plan.steps:
                if step.id[:1] == "s" and step.id[1:].isdigit():
                    highest = max(highest, int(step.id[1:]))
        return highest + 1

    def result(self, answer: str, status: RunStatus) -> RunResult:
        spent = self.ledger.spent
        return RunResult(
            run_id=self.run_id,
            goal=self.goal,
            answer=answer,
            status=status,
            plans=tuple(self.plans),
            steps=tuple(self.reports),
            committed=tuple(self.committed),
            artifacts=tuple(self.artifacts),
            usage_by_role=dict(self.usage_by_role),
            usage=sum(self.usage_by_role.values(), Usage()),
            model_calls=spent.model_calls,
            tool_calls=spent.tool_calls,
            stale_reports_dropped=self.stale_dropped,
            budget_exhausted=self.exhausted,
            trace_id=self.trace_id,
            rounds=self.round,
            verdicts=tuple(self.verdicts),
            memory=self.memory,
            events=tuple(self.events),
        )

    def finish(self, channel: RunChannel, answer: str, status: RunStatus) -> RunResult:
        """Emit the closing event and close the channel."""
        result = self.result(answer, status)
        event = RunCompleted(run_id=self.run_id, result=result)
        channel.result = result
        self.events.append(event)
        channel.close(event)
        return result

    def fail(self, channel: RunChannel, error: RunError) -> None:
        """End the run with an error."""
        channel.error = error
        event = RunFailed(run_id=self.run_id, error_type=type(error).__name__, message=str(error))
        self.events.append(event)
        channel.close(event)
