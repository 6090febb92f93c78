"""What a run logs, under ``regiment.run``: every record carries ``run_id``,
``step_id`` and ``worker`` in ``extra`` (``None`` where a record has no step or
worker), so a handler can show or filter them (``regiment run -v`` does).

The library only logs; handlers are the application's (the CLI and ``regiment
serve`` add them).
"""

from __future__ import annotations

import logging
import re

from regiment._text import clipped
from regiment.hierarchy._checks import CheckOutcome
from regiment.hierarchy._messages import StepReport

__all__ = (
    "budget_exhausted",
    "cancel_not_sent",
    "check_raised",
    "compression_skipped",
    "compressor_left_out",
    "model_retry",
    "plan_truncated",
    "stale_report_dropped",
    "step_ended_badly",
    "turn_failed_late",
)

_log = logging.getLogger("regiment.run")


def _where(run_id: str, step_id: str | None = None, worker: str | None = None) -> dict[str, object]:
    return {"run_id": run_id, "step_id": step_id, "worker": worker}


def stale_report_dropped(run_id: str, report: StepReport, current_version: int) -> None:
    """A report of an older plan version was dropped (expected after a replan: INFO)."""
    _log.info(
        "%s: report of step %s from plan version %d dropped: the plan is at version %d",
        report.worker,
        report.step_id,
        report.plan_version,
        current_version,
        extra=_where(run_id, report.step_id, report.worker),
    )


def budget_exhausted(run_id: str, limit: str, detail: str, step_id: str | None = None) -> None:
    """A budget limit ran out: the run ends early (WARNING)."""
    _log.warning("budget exhausted (%s): %s", limit, detail, extra=_where(run_id, step_id=step_id))


def compression_skipped(run_id: str, limit: str, size: int) -> None:
    """A compression was due but the budget could not pay for it and what follows (WARNING)."""
    _log.warning(
        "the carried context (about %d tokens) is past the compression threshold, but the "
        "budget (%s) cannot pay for a compression and the calls after it: it goes on "
        "uncompressed (raise the budget to have it compressed)",
        size,
        limit,
        extra=_where(run_id),
    )


def compressor_left_out(run_id: str, steps: list[str], unread: str | None) -> None:
    """The compressor's reply gave no facts for ``steps`` (``unread``: the reply, when
    it held no facts object at all): they are carried uncompressed (WARNING)."""
    why = "gave no facts for" if unread is None else "held no JSON facts object for"
    shown = "" if unread is None else f" ({clipped(unread, 200)!r})"
    one = len(steps) == 1
    _log.warning(
        "the compressor's reply %s %s %s%s, so %s carried with %s own output, "
        'uncompressed (its prompt asks for JSON with a "facts" entry per step id)',
        why,
        "step" if one else "steps",
        ", ".join(steps),
        shown,
        "it is" if one else "they are",
        "its" if one else "their",
        extra=_where(run_id),
    )


def plan_truncated(run_id: str, purpose: str, steps: int, max_steps: int) -> None:
    """A plan had more steps than ``Planner.max_steps``: the rest are not run (WARNING)."""
    _log.warning(
        "the planner's %s had %d steps; only the first %d (Planner.max_steps) are kept, "
        "the other %d will not run (raise max_steps, or ask for fewer steps)",
        purpose,
        steps,
        max_steps,
        steps - max_steps,
        extra=_where(run_id),
    )


def critique_unread(run_id: str, round: int, warning: str) -> None:
    """No critic reply of a round parsed: the round is taken as passed, unjudged (WARNING)."""
    _log.warning(
        '%s (round %d; the critic must reply with JSON such as {"passed": true})',
        warning,
        round,
        extra=_where(run_id),
    )


def model_retry(run_id: str, purpose: str, agent: str, why: str) -> None:
    """A model call is made again because its reply could not be used (INFO)."""
    _log.info(
        "%s's %s reply could not be used, asking again: %s",
        agent,
        purpose,
        _unquoted(" ".join(why.split())),  # one line per record
        extra=_where(run_id, worker=agent),
    )


# A quoted string of a problem (Python's repr): a name ('nobody'), or a piece of the reply.
# Not an apostrophe ("step 2's text"): a quote opens after no letter or digit.
_QUOTED = re.compile(r"(?<![A-Za-z0-9])(?:'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*")')
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,40}")


def _unquoted(problems: str) -> str:
    """``problems`` with each quoted piece of the model's reply left out (a name it gave,
    a worker's or a step's, stays): the reply may quote the user's goal or a tool's
    result, and a log line is no place for them (the model, and ``PlanError``, have it)."""

    def left_out(found: re.Match[str]) -> str:
        inner = found.group()[1:-1]
        return found.group() if _NAME.fullmatch(inner) else f"<{len(inner)} characters>"

    return _QUOTED.sub(left_out, problems)


def turn_failed_late(run_id: str, message: str, error: Exception) -> None:
    """A planner turn failed after the run's planner had stopped (ERROR, with the traceback)."""
    _log.error(
        "the run's planner failed handling %s after it had stopped: %s: %s",
        message,
        type(error).__name__,
        error,
        exc_info=error,
        extra=_where(run_id),
    )


def cancel_not_sent(run_id: str) -> None:
    """A crashed planner could not tell every worker to stop its steps (WARNING)."""
    _log.warning(
        "the run's planner crashed and could not tell every worker to stop this run's steps "
        "(a worker's mailbox was full, and a crashed planner has no task to wait for room): "
        "those steps end when they finish or their worker stops",
        extra=_where(run_id),
    )


def step_ended_badly(run_id: str, report: StepReport) -> None:
    """A step failed or timed out (WARNING): what raised in it (a tool with
    ``on_tool_error="raise"``, a model, an approver, a ``Prompts`` hook) is told here
    once, even when a replan recovers and the run's own error never shows it."""
    _log.warning(
        "%s %s: step ended %s: %s",
        report.worker,
        report.step_id,
        report.status,
        report.error,
        extra=_where(run_id, report.step_id, report.worker),
    )


def check_raised(run_id: str, report: StepReport, check: str, outcome: CheckOutcome) -> None:
    """A check's predicate (or its ``explain``) raised (WARNING, with the traceback): the
    check failed and the planner replans, but the bug is the application's to fix."""
    _log.warning(
        "%s %s: check '%s' raised, so it failed (%s); fix the check to return False for a "
        "report it does not accept",
        report.worker,
        report.step_id,
        check,
        outcome.reason,
        exc_info=outcome.error,
        extra=_where(run_id, report.step_id, report.worker),
    )
