"""Running a chain of guardrails over one subject: in order, each rewrite feeding
the next guard, stopping at the first trip. A guard that raises trips with the
exception's type as the reason (cancellation is never caught)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar, final

import anyio
import anyio.to_thread

from regiment._stray import stray, stray_reason
from regiment._text import clipped
from regiment.errors import BudgetExceeded
from regiment.hierarchy._cut_calls import answered_cut
from regiment.hierarchy.guard._judge import Spend, purse_spent, spending, unreplayed
from regiment.hierarchy.guard._note import GuardNote
from regiment.hierarchy.guard._rewrites import checked_rewrite
from regiment.hierarchy.guard._types import KINDS, Guardrail, Outcome, Pass, Rewrite, Trip
from regiment.models import ModelResponse
from regiment.telemetry import Telemetry, error_type, mark_error, redact
from regiment.telemetry import semconv as sc

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ("Checked", "GUARD_SPAN", "Where", "run_chain")

S = TypeVar("S")
GUARD_SPAN = sc.SPAN_GUARDRAIL
_log = logging.getLogger("regiment.guardrail")


@final
@dataclass(frozen=True, slots=True)
class Where:
    """Where a chain runs, for notes and log lines."""

    role: str = ""
    worker: str | None = None
    step_id: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Checked(Generic[S]):
    """A chain's verdict: the subject as the last guard left it, or the tripping
    guard and its reason."""

    subject: S
    tripped: Guardrail | None = None
    reason: str = ""
    spent: tuple[ModelResponse, ...] = ()  # the guards' own model calls (see ``judge``)
    # Set when the tripping guard failed rather than judged (it raised, returned no
    # outcome, or rewrote the subject into a wrong type): what it did. A bug in the guard.
    fault: str = ""


async def run_chain(
    guards: Sequence[Guardrail],
    subject: S,
    telemetry: Telemetry,
    notes: list[GuardNote],
    where: Where = Where(),
) -> Checked[S]:
    """Run ``guards`` over ``subject``; every trip and rewrite is added to ``notes``."""
    spend = Spend(telemetry, role=where.worker or where.role)
    token = spending().set(spend)
    try:
        checked = await _run(guards, subject, telemetry, notes, where, spend)
    except anyio.get_cancelled_exc_class():  # billed all the same: the judges that answered
        if (spent := purse_spent()) is not None and (answered := unreplayed(spend.responses)):
            answered_cut(spent, spend.role, answered)
        raise
    finally:
        spending().reset(token)
    if not spend.responses:
        return checked
    return dataclasses.replace(checked, spent=tuple(spend.responses))


async def _run(
    guards: Sequence[Guardrail],
    subject: S,
    telemetry: Telemetry,
    notes: list[GuardNote],
    where: Where,
    spend: Spend,
) -> Checked[S]:
    kind = KINDS[type(subject)]
    for guard in guards:
        spend.guard = guard.name  # who a judge call is made for (``judge``)
        # Through Telemetry, as every span: a guard cancelled with its run is marked so.
        with telemetry.span(
            GUARD_SPAN,
            {sc.REGIMENT_GUARDRAIL_NAME: guard.name, sc.REGIMENT_GUARDRAIL_SUBJECT: kind},
        ) as span:
            outcome, fault = await _judge(guard, subject, span, telemetry.capture_content)
            match outcome:
                case Pass():
                    span.set_attribute(sc.REGIMENT_GUARDRAIL_OUTCOME, "pass")
                case Rewrite(subject=new):
                    usable = checked_rewrite(subject, new)
                    if isinstance(usable, str):  # a bug in the guard: it fails closed
                        _log.warning("guardrail %s %s", guard.name, usable)
                        outcome, fault = Trip(usable), usable
                    else:
                        span.set_attribute(sc.REGIMENT_GUARDRAIL_OUTCOME, "rewrite")
                        notes.append(_note(guard, kind, "rewrote", "", where))
                        subject = usable  # type: ignore[assignment]
            if isinstance(outcome, Trip):
                span.set_attribute(sc.REGIMENT_GUARDRAIL_OUTCOME, "trip")
                if telemetry.capture_content:  # content: redacted and cut as all of it is
                    # cut first (with room for a key across the cut): a huge reason
                    # would cost its whole length in every pattern of redact
                    limit = telemetry.content_limit
                    reason = redact(outcome.reason[: limit + 256])[:limit]
                    span.set_attribute(sc.REGIMENT_GUARDRAIL_REASON, reason)
                else:  # as a replan's reason and a check's detail: its length only
                    span.set_attribute(sc.REGIMENT_GUARDRAIL_REASON_LENGTH, len(outcome.reason))
                notes.append(_note(guard, kind, "tripped", outcome.reason, where))
                _log.info(
                    "guardrail %s tripped on the %s: %s",
                    guard.name,
                    kind.replace("_", " "),
                    outcome.reason,
                    extra={
                        "guardrail": guard.name,
                        "worker": where.worker,
                        "step_id": where.step_id,
                    },
                )
                return Checked(subject, guard, outcome.reason, fault=fault)
    return Checked(subject)


async def _judge(
    guard: Guardrail, subject: object, span: Span, capture: bool
) -> tuple[Outcome, str]:
    """What ``guard`` says of ``subject``, and what it did wrong if it failed (else "").
    A guard that raised trips, and its span is then marked ERROR with the exception's
    type (the guard failed, it did not judge)."""
    try:
        if guard._in_thread:
            outcome: object = await _in_thread(guard, subject)
        else:
            outcome = guard.check(subject)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except BudgetExceeded as exc:  # a judge call the budget refused: say why
        return Trip(str(exc)), ""
    except Exception as exc:  # a guard that raises trips: fail closed
        _log.warning(  # the application's code: its traceback is what finds the bug
            "guardrail %s raised %s: %s", guard.name, type(exc).__name__, exc, exc_info=exc
        )
        mark_error(span, error_type(exc), f"{type(exc).__name__}: {exc}", capture=capture)
        return Trip(type(exc).__name__), f"raised {type(exc).__name__}: {clipped(str(exc))}"
    except BaseException as exc:  # a cancellation or an interrupt, as a rule
        if not stray(exc):
            raise
        _log.warning("guardrail %s %s", guard.name, stray_reason(exc))
        # not the worker's end (see regiment._stray)
        return Trip(type(exc).__name__), stray_reason(exc)
    if not isinstance(outcome, Pass | Rewrite | Trip):
        wrong = f"returned {type(outcome).__name__}, not Pass, Rewrite or Trip"
        return Trip(wrong), wrong
    reason: object = outcome.reason if isinstance(outcome, Trip) else ""
    if not isinstance(reason, str):  # Trip(3) crashed the planner (the len() of its reason)
        wrong = f"returned Trip({reason!r:.100}), whose reason is not text (a str)"
        return Trip(wrong), wrong
    return outcome, ""


class _Carried(Exception):
    """A ``BaseException`` a sync guard raised in its thread, carried to the chain's task
    (a ``GeneratorExit`` set on the thread's future as it is would close the task)."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__()
        self.raised = raised


async def _in_thread(guard: Guardrail, subject: object) -> object:
    """``guard.check(subject)`` in a worker thread: a guard that blocks holds no other
    step or run up, and a cancel (the run's, the step's timeout) does not wait for it
    (Python cannot stop the thread: it runs to its end unseen)."""

    def check() -> object:
        try:
            return guard.check(subject)
        except Exception:
            raise
        except BaseException as exc:
            raise _Carried(exc) from None

    try:
        return await anyio.to_thread.run_sync(check, abandon_on_cancel=True)
    except _Carried as carried:
        raise carried.raised from None


def _note(guard: Guardrail, kind: str, outcome: str, reason: str, where: Where) -> GuardNote:
    return GuardNote(
        guardrail=guard.name,
        subject=kind,  # type: ignore[arg-type]
        outcome=outcome,  # type: ignore[arg-type]
        reason=reason,
        role=where.role,
        worker=where.worker,
        step_id=where.step_id,
    )
