"""How the ``regiment`` command shows a run as plain lines (the live table is ``_cli_live``).

Nothing here needs rich: a plain ``pip install regiment`` runs every command
with these lines; the live view needs the ``cli`` extra.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, TextIO, assert_never

from regiment._text import counted, visible
from regiment.cli._progress import RunProgress, tool_failure_line
from regiment.hierarchy import events as ev
from regiment.models import Usage, usd_text

if TYPE_CHECKING:
    from regiment.hierarchy import Verdict

__all__ = ("PlainView", "ProgressView", "cut", "describe")

_OUTPUT_CHARS = 120


class ProgressView(Protocol):
    """Shows a run as it goes."""

    def show(self, event: ev.Event) -> None:
        """The run moved on."""
        ...

    def tick(self) -> None:
        """Time passed (refresh clocks)."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def cut(text: str, limit: int = _OUTPUT_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, its control characters shown
    as escapes (a model's text must not drive the terminal)."""
    flat = visible(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _tokens(usage: Usage) -> str:
    """``, N tokens`` for the step's model calls, from its report (so with tracing
    off too), what of them the prompt cache took, and what they cost when priced;
    nothing for a step that made none."""
    used = usage.total_tokens
    return f", {counted(used, 'token')}{cached(usage)}{cost(usage)}" if used else ""


def cached(usage: Usage) -> str:
    """`` (prompt cache: N read, M written)`` when the calls' provider reported tokens
    read from its prompt cache or written to it (issue #19: in the CLI summary), else
    nothing."""
    read, written = usage.cache_read_tokens, usage.cache_write_tokens
    return f" (prompt cache: {read} read, {written} written)" if read or written else ""


def cost(usage: Usage) -> str:
    """``, $0.001234`` when ``usage`` was priced (its models have a ``Price``), else nothing."""
    return f", {usd_text(usage.micro_usd)}" if usage.micro_usd else ""


def estimated(part: Usage) -> str:
    """`` (of it estimated: N tokens, $x, ...)`` when part of a run's usage is an estimate
    (calls cut in flight, charged at their most), else nothing."""
    if not part.total_tokens and not part.micro_usd:
        return ""
    tokens = counted(part.total_tokens, "token")
    return f" (of it estimated: {tokens}{cost(part)}, calls cut in flight)"


def _counts(model_calls: int, tool_calls: int, usage: Usage) -> str:
    """``N model calls, M tool calls, T tokens`` (singular for 1), what the prompt cache
    took and what it cost: a run's last line."""
    calls = f"{counted(model_calls, 'model call')}, {counted(tool_calls, 'tool call')}"
    return f"{calls}, {counted(usage.total_tokens, 'token')}{cached(usage)}{cost(usage)}"


def describe(event: ev.Event) -> str | None:
    """One plain line for an event (``None`` for events not worth a line)."""
    match event:
        case ev.RunStarted(team=team, goal=goal):
            return f"run started: team {team}, goal: {cut(goal)}"
        case ev.PlanCreated(plan=plan):
            steps = "; ".join(
                f"{s.id} [{s.worker}] {cut(s.description, 60)}"
                + (f" after {','.join(s.depends_on)}" if s.depends_on else "")
                for s in plan.steps
            )
            return f"plan v{plan.version}: {steps or 'nothing to do'}"
        case ev.StepDispatched(step_id=sid, worker=worker, plan_version=v, attempt=attempt):
            again = f" (attempt {attempt})" if attempt > 1 else ""
            return f"  -> {sid} to {worker} (plan v{v}){again}"
        case ev.StepCompleted(step_id=sid, worker=worker, output=output, usage=used):
            return f"  <- {sid} done by {worker}{_tokens(used)}: {cut(output)}"
        case ev.StepErrored(step_id=sid, worker=worker, status=status, error=error):
            return f"  !! {sid} {status} ({worker}): {cut(error)}"
        case ev.ToolFailed():
            return f"  !! {cut(tool_failure_line(event), 2 * _OUTPUT_CHARS)}"
        case ev.TextDelta() | ev.ToolCallStarted():
            return None  # the answer streams to stdout; a call is told when it ends
        case ev.ToolCallFinished(step_id=sid, tool=tool, outcome=outcome, duration=took):
            return f"     {sid} {tool}: {_call_ending(outcome, took)}"
        case ev.CheckFailed(step_id=sid, check=check, reason=reason):
            return f"  !! {sid} failed check {check}: {cut(reason)}"
        case ev.Replanned(old_version=old, new_version=new, reason=reason, removed=rm, added=add):
            removed = ", ".join(s.id for s in rm) or "nothing"
            added = ", ".join(s.id for s in add) or "nothing"
            return f"replan v{old} -> v{new}: {cut(reason)} (removed {removed}; added {added})"
        case ev.StaleReportDropped(step_id=sid, report_version=v, current_version=cur):
            return f"  x  dropped a stale report of {sid} (v{v}, current v{cur})"
        case ev.CritiqueCompleted(verdict=verdict):
            return f"critique of round {verdict.round}: {_judged(verdict)}"
        case ev.RoundStarted(round=number):
            return f"round {number} started"
        case ev.ContextCompressed(before_tokens=before, after_tokens=after):
            return f"context compressed: {before} -> {counted(after, 'token')}"
        case ev.SynthesisStarted(committed_steps=steps):
            return f"synthesizing the answer from {', '.join(steps) or 'no steps'}"
        case ev.BudgetExhausted() | ev.BudgetToppedUp():
            return _budget_line(event)
        case ev.GuardrailTripped(guardrail=name, subject=subject, reason=reason):
            return f"  !! guardrail {name} tripped on the {subject}: {cut(reason)}"
        case ev.GuardrailRewrote(guardrail=name, subject=subject):
            return f"  ~  guardrail {name} rewrote the {subject}"
        case ev.ApprovalRequested(request=r):
            args = cut(json.dumps(r.arguments, sort_keys=True), 60)
            return f"  ?? {r.step_id} {r.worker} waits for approval: {r.tool_name}({args}) [{r.request_id}]"
        case ev.ApprovalResolved():
            return _resolved_line(event)
        case ev.RunCompleted(result=result):
            counts = _counts(result.model_calls, result.tool_calls, result.usage)
            return f"run {result.status}: {counts}{estimated(result.estimated_usage)}"
        case ev.RunFailed(error_type=kind):  # why: the command's last line says it once
            counts = _counts(event.model_calls, event.tool_calls, event.usage)
            return f"run failed ({kind}): {counts}{estimated(event.estimated_usage)}"
        case _:
            assert_never(event)


def _resolved_line(event: ev.ApprovalResolved) -> str:
    """A decision, and what the call's guards made of an edit: what ran, or that none did."""
    by = f" by {event.decided_by}" if event.decided_by else ""
    refused = event.decision == "deny" or event.guarded == "refused"
    line = f"  {'no' if refused else 'ok'} {event.tool} [{event.request_id}]: {event.decision}{by}"
    if event.guarded == "rewritten":
        ran = cut(json.dumps(event.ran_arguments, sort_keys=True), 60)
        return f"{line}, rewritten by its guards: ran with {ran}"
    if event.guarded == "refused":
        return f"{line}, refused by its guards: {cut(event.guard_reason)}"
    if event.guarded == "unjudged":
        return f"{line}, its guards had not judged it when the run stopped"
    return line


def _judged(verdict: Verdict) -> str:
    if verdict.warning:  # no reply of the critic parsed: passed by rule, not judged
        return f"passed, unjudged ({cut(verdict.warning)})"
    return "passed" if verdict.passed else f"not met: {cut(verdict.feedback)}"


def _budget_line(event: ev.BudgetExhausted | ev.BudgetToppedUp) -> str:
    if isinstance(event, ev.BudgetToppedUp):
        return f"  +  {event.detail}"
    return f"budget exhausted ({event.limit}): {event.detail}"


class PlainView:
    """One timestamped line per event, for logs, CI and pipes."""

    def __init__(self, progress: RunProgress, stream: TextIO) -> None:
        self._progress = progress
        self._stream = stream

    def show(self, event: ev.Event) -> None:
        """Print the event's line."""
        line = describe(event)
        if isinstance(event, ev.SynthesisStarted) and (left := self._progress.rejected()):
            checks = "their checks" if len(left) > 1 else "its check"
            line = f"{line}; {', '.join(left)} too, marked as rejected by {checks}"
        if line is not None:
            # visible(): step ids and worker names come from a model's plan too.
            self._stream.write(f"[{self._progress.elapsed():6.1f}s] {visible(line)}\n")
            self._stream.flush()

    def tick(self) -> None:
        """Plain lines have no clock to refresh."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def _call_ending(outcome: str, took: float) -> str:
    """How a tool call ended, for its progress line."""
    if outcome == "awaiting_approval":  # its run paused: the body has not run
        return "not run, awaits a decision"
    return f"{outcome} in {took:.2f} s"
