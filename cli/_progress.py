"""What the ``regiment`` command knows about a run while it goes: built from its events.

A step's tokens are its report's (the usage its events carry), so they are there
whether tracing is on or not (``OTEL_SDK_DISABLED=true``), a Ray step's too. While
a step runs, the live view shows what its ``chat`` spans have spent so far (a span
processor files each model call's usage under the step its worker span belongs to).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, assert_never

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from regiment._text import clipped, counted, visible
from regiment.cli._answer import void_of_call
from regiment.hierarchy import Plan
from regiment.hierarchy import events as ev
from regiment.models import Usage
from regiment.telemetry import semconv as sc

__all__ = ("RunProgress", "StepRow", "StepState", "TokenMeter", "tool_failure_line")

StepState: TypeAlias = Literal[
    "waiting", "running", "done", "failed", "check failed", "replaced", "cancelled"
]
_NOT_STEP = "(planner)"  # tokens spent outside any step: planning, synthesis, critique


def tool_failure_line(event: ev.ToolFailed) -> str:
    """``billing s1: divide failed: ZeroDivisionError: division by zero``."""
    message = clipped(" ".join(event.message.split()))
    return f"{event.worker} {event.step_id}: {event.tool} failed: {message}"


@dataclass(slots=True)
class StepRow:
    """One step as the view shows it."""

    id: str
    worker: str
    description: str
    state: StepState = "waiting"
    started: float | None = None
    finished: float | None = None
    note: str = ""
    tokens: int = 0  # reported: what the step's model calls spent (every attempt)

    def elapsed(self, now: float) -> float | None:
        """Seconds since it was dispatched (until it finished)."""
        if self.started is None:
            return None
        return (self.finished if self.finished is not None else now) - self.started


@dataclass(slots=True)
class RunProgress:
    """The run so far: plan version, steps and their states, what happened last."""

    clock: Callable[[], float] = time.monotonic
    team: str = ""
    run_id: str = ""
    version: int = 0
    steps: dict[str, StepRow] = field(default_factory=dict)
    replans: list[str] = field(default_factory=list)
    tool_failures: list[str] = field(default_factory=list)
    phase: str = "starting"
    started: float = 0.0
    finished: bool = False
    answer: str = ""  # the synthesizer's text so far, as it streams
    # How many characters each of its calls streamed (``TextDelta.call``), in order.
    answer_told: dict[str, int] = field(default_factory=dict)
    tokens: int = 0  # reported so far: the steps', then the whole run's
    micro_usd: int = 0  # what they cost (priced models only), as tokens
    usage: Usage = field(default_factory=Usage)  # the whole run's, once it has ended

    def __post_init__(self) -> None:
        self.started = self.clock()

    def _answer_text(self, event: ev.TextDelta) -> None:
        """More of the answer; or a call's text void (it streams again), or declined."""
        if event.refused:
            self.answer = ""
            self.answer_told.clear()
        elif event.void:
            self.answer = void_of_call(self.answer, self.answer_told, event.call, event.void)
        else:
            told = self.answer_told
            told[event.call] = told.get(event.call, 0) + len(event.text)
            self.answer += event.text

    def rejected(self) -> list[str]:
        """The steps whose check rejected their output, and that were not done since."""
        return [sid for sid, row in self.steps.items() if row.state == "check failed"]

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self.started

    def apply(self, event: ev.Event) -> None:
        """Update from one event."""
        now = self.clock()
        match event:
            case ev.RunStarted(team=team, run_id=run_id):
                self.team, self.run_id, self.phase = team, run_id, "planning"
            case ev.PlanCreated(plan=plan):
                self._take_plan(plan)
            case ev.StepDispatched(step_id=sid, worker=worker):
                row = self._row(sid, worker)
                row.state, row.started, row.finished = "running", now, None
                self.phase = "working"
            case ev.StepCompleted(step_id=sid, worker=worker, usage=used):
                self._finish(self._spent(self._row(sid, worker), used), "done", now)
            case ev.StepErrored(step_id=sid, worker=worker, status=status, error=error):
                row = self._spent(self._row(sid, worker), event.usage)
                self._finish(row, "failed", now, f"{status}: {error}")
            case ev.ToolFailed():
                self.tool_failures.append(tool_failure_line(event))
            case ev.CheckFailed(step_id=sid, check=check, reason=reason, usage=used):
                row = self._spent(self._row(sid, ""), used)
                self._finish(row, "check failed", now, f"{check}: {reason}")
            case ev.Replanned(old_version=old, new_version=new, reason=reason, removed=removed):
                self.replans.append(f"v{old} -> v{new}: {reason}")
                for step in removed:
                    self._row(step.id, step.worker or "").state = "replaced"
                self.phase = "replanning"
            case ev.SynthesisStarted():
                self.phase, self.answer = "synthesizing", ""
                self.answer_told.clear()
            case ev.TextDelta(role="synthesizer"):
                self._answer_text(event)
            case ev.TextDelta():
                pass
            case ev.ToolCallStarted() | ev.ToolCallFinished():
                pass
            case ev.ApprovalRequested(request=request):
                self._row(request.step_id, "").note = f"waits for approval of {request.tool_name}"
            case ev.ApprovalResolved(step_id=sid, tool=tool, decision=decision):
                self._row(sid, "").note = f"{tool}: {decision}"
            case (
                ev.CritiqueCompleted()
                | ev.RoundStarted()
                | ev.ContextCompressed()
                | ev.StaleReportDropped()
                | ev.GuardrailRewrote()
                | ev.GuardrailTripped()
            ):
                pass
            case ev.BudgetExhausted() | ev.BudgetToppedUp():
                self._budget(event)
            case ev.RunCompleted(result=result):
                self._ended(result.status, result.usage)
            case ev.RunFailed(usage=usage):  # what it spent before it failed, as a completed run's
                self._ended("failed", usage)
            case _:
                assert_never(event)

    def _ended(self, status: str, usage: Usage) -> None:
        """The run ended ``status``, having spent ``usage`` in all."""
        self.phase, self.finished, self.usage = status, True, usage
        self.tokens, self.micro_usd = usage.total_tokens, usage.micro_usd

    def _budget(self, event: ev.BudgetExhausted | ev.BudgetToppedUp) -> None:
        """A step topped up, or a budget (a step's share, or the run's) ran out."""
        if event.step_id is None:  # the run's own budget: it ends
            assert isinstance(event, ev.BudgetExhausted)
            self.phase = f"budget exhausted ({event.limit})"
        else:  # a step topped up, or only its share ran out: the run goes on
            self._row(event.step_id, "").note = event.detail

    def interrupt(self) -> None:
        """Ctrl-C cancelled the run: its running steps are cancelled (no report will say
        so: the stream of events is what was cancelled)."""
        now = self.clock()
        self.phase = "interrupted"
        for row in self.steps.values():
            if row.state == "running":
                row.state, row.finished = "cancelled", now

    def summary(self) -> str:
        """How far the run got, in one line (for an interrupted run)."""
        if not self.version:  # not "plan v0: 0 of 0 steps done"
            before = "its first plan" if self.run_id else "the team had started"
            return f"after {self.elapsed():.1f} s, before {before}"
        current = [r for r in self.steps.values() if r.state != "replaced"]
        done = [r.id for r in current if r.state == "done"]
        cut_short = ("running", "cancelled")
        running = [f"{r.id} ({r.worker})" for r in current if r.state in cut_short]
        text = (
            f"after {self.elapsed():.1f} s, plan v{self.version}: "
            f"{len(done)} of {counted(len(current), 'step')} done"
        )
        text += f" ({', '.join(done)})" if done else ""
        return visible(text + (f"; was running {', '.join(running)}" if running else ""))

    def _take_plan(self, plan: Plan) -> None:
        self.version = plan.version
        for step in plan.steps:
            row = self._row(step.id, step.worker or "")
            row.description = step.description
            if step.worker:
                row.worker = step.worker
        self.phase = "working"

    def _row(self, step_id: str, worker: str) -> StepRow:
        if step_id not in self.steps:
            self.steps[step_id] = StepRow(id=step_id, worker=worker, description="")
        return self.steps[step_id]

    def _spent(self, row: StepRow, usage: Usage) -> StepRow:
        row.tokens += usage.total_tokens
        self.tokens += usage.total_tokens
        self.micro_usd += usage.micro_usd
        return row

    @staticmethod
    def _finish(row: StepRow, state: StepState, now: float, note: str = "") -> None:
        row.state, row.finished, row.note = state, now, note


class TokenMeter(SpanProcessor):
    """Adds up each model call's tokens under the step its worker span belongs to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._step_of: dict[int, str] = {}
        self._tokens: dict[str, int] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Remember which step a span belongs to: its parent's, else its own. A nested
        team's steps (``s1``, ``s2`` of its own plan) count toward the step of the
        run that gave the team its work, not toward the run's steps of the same ids."""
        own = span.attributes.get(sc.REGIMENT_STEP_ID) if span.attributes else None
        with self._lock:
            step = None if span.parent is None else self._step_of.get(span.parent.span_id)
            if step is None and isinstance(own, str):
                step = own
            if step is not None:
                self._step_of[span.context.span_id] = step

    def on_end(self, span: ReadableSpan) -> None:
        """File a finished model call's tokens."""
        attributes = span.attributes or {}
        used = (
            attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0),
            attributes.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS, 0),
        )
        tokens = sum(n for n in used if isinstance(n, int))
        if not tokens or span.context is None:
            return
        with self._lock:
            key = self._step_of.get(span.context.span_id, _NOT_STEP)
            self._tokens[key] = self._tokens.get(key, 0) + tokens

    def step_tokens(self, step_id: str) -> int:
        """Tokens the step's model calls used so far."""
        with self._lock:
            return self._tokens.get(step_id, 0)

    def total(self) -> int:
        """Tokens of every model call so far."""
        with self._lock:
            return sum(self._tokens.values())
