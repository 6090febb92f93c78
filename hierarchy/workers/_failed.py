"""The report of a step that raised, and whether any replan could fix it."""

from __future__ import annotations

import logging

from regiment.errors import (
    ApprovalError,
    ClusterLost,
    ConfigError,
    ModelAPIError,
    RegimentError,
    StepFailed,
    ToolError,
)
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._model_call import described, raised_class
from regiment.hierarchy._prompts import HookFailed
from regiment.hierarchy._raised_by import spent_by
from regiment.hierarchy.workers._loop import StepProgress
from regiment.telemetry import error_type

__all__ = ("failed_report", "is_fatal")

_log = logging.getLogger("regiment.worker")


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a failure no replan can fix: a model
    that refuses every call alike (``ModelAPIError.permanent``: a bad key, no
    permission, an unknown model, an invalid request), or a nested team's run that
    ended on one (``StepFailed.fatal``, or its planner's call failing so); or a
    ``Prompts`` hook of the user's that raised building the step's prompt, an approver
    that raised or gave no decision, or a tool's ``idempotency_key`` function or
    ``requires_approval`` predicate that failed (code to fix, failing alike every time);
    or the Ray cluster a step ran on went away (``ClusterLost``: no replica is left); or
    any other ``ConfigError`` (a model of the application's whose ``complete()`` returned
    no ``ModelResponse``, say): configuration to fix, which no replan changes (each
    replan only paid a planner call to fail the same way)."""
    if isinstance(exc, (ConfigError, ClusterLost)):  # (HookFailed is a ConfigError)
        return True
    if isinstance(exc, ApprovalError) and exc.kind == "approver":
        return True
    if isinstance(exc, ToolError) and exc.fatal:
        return True
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ModelAPIError) and cause.permanent:
            return True
        if isinstance(cause, StepFailed) and cause.fatal:
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


def failed_report(
    progress: StepProgress, assign: AssignStep, worker: str, exc: BaseException, where: str = ""
) -> StepReport:
    """The report of a step that ended by raising ``exc`` (``where`` leads its error text).

    A reply the model refused, or a stream that broke after the provider reported its
    tokens, was billed all the same: the report counts it; so is a model call that
    failed saying nothing of its tokens (a call all the same: ``spent_by``)."""
    _log_applications(assign, worker, exc)
    if (spent := spent_by(exc)) is not None:
        progress.model_calls += spent[1]
        progress.usage = progress.usage + spent[0]
    return progress.report(
        assign,
        worker,
        "failed",
        # A hook's failure says what raised; its own class name would only repeat it.
        error=f"{where}{exc}" if isinstance(exc, HookFailed) else f"{where}{described(exc)}",
        error_type=error_type(exc),
        fatal=is_fatal(exc),
    )


def _log_applications(assign: AssignStep, worker: str, exc: BaseException) -> None:
    """Log, with its traceback, what the application's own code raised that ended the
    step (a model of its own, an approver, a hook), directly or as the cause of one of
    ours: the report and the planner keep only its text, and a traceback nobody sees
    is a bug nobody finds. At DEBUG, as a tool's: the step's end is the WARNING (on
    ``regiment.run``), logged once."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while isinstance(cause, RegimentError) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__
    if cause is None or isinstance(cause, RegimentError):
        return  # ours all the way down: its message says what happened
    _log.debug(  # the class only: its message may quote the user's text (see _guarded.py)
        "%s %s: the step failed: %s (traceback below)",
        worker,
        assign.step.id,
        raised_class(cause),
        exc_info=cause,
        extra={"run_id": assign.run_id, "step_id": assign.step.id, "worker": worker},
    )
