"""What a replan is told of the tool calls already made by steps whose result did not hold.

A step its check rejected, or one that failed, may have acted: a refund issued, a
mail sent. The replan that replaces its version starts a new conversation with the
planner's model, which saw none of those calls; a step it lists again makes its calls
anew, under new idempotency keys where its tool declares none. So the replan's (and a
round's) request lists them: per step, each call's tool, how it ended and its declared
key, at most ``CALLS_LISTED`` of them (the rest counted). Never the arguments or the
results: the step's own conversation had those, and the committed lines carry its output.

The steps a replan cuts (in flight as their version is replaced) may have acted too, and
their reports come after the request (dropped as stale): each in-process step that called
tools is in its run's fence (``StepFence.calling``) until it reports, so the request lists
its calls so far (:class:`Cut`), marked cut, result unknown; a call running as it is cut,
``called, result unknown``. A resumed run holds the cut steps' journaled reports to drop
them again (``Dispatcher.held_of``): its request lists their calls from those.

Built only when the planner asks for a new tail, never on a step's way.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, NamedTuple

from regiment._text import counted, shown
from regiment.hierarchy._messages import StepReport, ToolOutcome
from regiment.hierarchy.run._versions import PlanVersions
from regiment.hierarchy.workers._outcomes import CUT

if TYPE_CHECKING:
    from regiment.hierarchy.run._book import RunBook

__all__ = ("CALLS_LISTED", "Cut", "cut_now", "cut_steps", "not_held", "with_made_calls")


class Cut(NamedTuple):
    """A step the replan cuts, in flight: its calls so far (``calling``: running now)."""

    step_id: str
    plan_version: int
    worker: str
    tool_outcomes: Sequence[ToolOutcome]
    calling: Sequence[str] = ()  # the tools of the calls running as it is cut


CALLS_LISTED = 5
"""The calls of one step a request lists; more are counted (``and 3 more calls``)."""

# How a step that did not hold ended, as its line says (a failed one: its status).
_ENDED = {
    "timed_out": "timed out",
    "iteration_limit": "stopped at its iteration limit",
    "budget_exhausted": "stopped at its budget share",
}


def not_held(versions: PlanVersions) -> list[StepReport]:
    """The reports, in arrival order, that made tool calls of the steps whose result
    did not hold: the current version's that failed (timed out, were cancelled) and the
    kept evidence of every step its check rejected."""
    version, rejected, committed = versions.version, versions.rejected, versions.committed
    return [
        r
        for r in versions.reports
        if r.tool_outcomes
        and (
            (r.plan_version == version and r.status != "done")
            or (r.step_id in rejected and committed.get(r.step_id) is r)
        )
    ]


def cut_steps(book: RunBook) -> list[StepReport | Cut]:
    """What the replan of the current version cuts that called tools: its in-process
    steps in flight (their calls so far), and a resumed run's reports of the steps it cut
    before (held to be dropped again as the new version is adopted)."""
    version, dispatcher = book.versions.version, book.dispatcher
    cut: list[StepReport | Cut] = [*dispatcher.held_of(version)]
    for assign, progress in book.channel.fence.in_flight(version):
        step = assign.step
        worker = dispatcher.inflight.get((version, step.id, assign.attempt), step.worker or "")
        calling = [call.name for call in progress.calling]
        cut.append(Cut(step.id, version, worker, tuple(progress.outcomes), calling))
    return cut


def cut_now(versions: PlanVersions) -> list[StepReport]:
    """The dropped reports that made tool calls of the steps cut as the current version
    is replaced (those of older versions were listed by the replan that cut them)."""
    version = versions.version
    return [r for r in versions.cut if r.plan_version == version]


def with_made_calls(
    text: str,
    line: str,
    reports: Sequence[StepReport],
    rejected: Container[str],
    cut: Sequence[StepReport | Cut] = (),
) -> str:
    """``text`` with ``line`` (``Prompts.calls_made``) and a line per report of
    ``reports``, then per step of ``cut``, after it; ``text`` as it is when there are
    none or ``line`` is ``""``.

    ``rejected``: the ids of the steps their check rejected (``PlanVersions.rejected``);
    ``cut``: the steps the replan cuts (:class:`Cut`; reports dropped already,
    :func:`cut_now`): their result unknown.
    """
    cut = [c for c in cut if c.tool_outcomes or (isinstance(c, Cut) and c.calling)]
    if not line or not (reports or cut):
        return text
    listed = [_step_line(r, _ended(r, r.step_id in rejected)) for r in reports]
    listed += [_step_line(c, _CUT) for c in cut]
    return f"{text}\n\n{line}\n" + "\n".join(listed)


_CUT = "cut as its plan version was replaced, result unknown"


def _ended(report: StepReport, rejected: bool) -> str:
    return "rejected by its check" if rejected else _ENDED.get(report.status, report.status)


def _step_line(report: StepReport | Cut, ended: str) -> str:
    calls = [_call(o) for o in report.tool_outcomes]
    if isinstance(report, Cut):
        calls += [f"{tool} called, result unknown (it may have acted)" for tool in report.calling]
    if len(calls) > CALLS_LISTED:
        calls[CALLS_LISTED:] = ["and " + counted(len(calls) - CALLS_LISTED, "more call")]
    where = f"{report.step_id} (v{report.plan_version}, worker '{report.worker}', {ended})"
    return f"- {where}: " + "; ".join(calls)


def _call(outcome: ToolOutcome) -> str:
    """One call as the request tells it: ``refund succeeded (key 'refund:order_id=7')``."""
    if not outcome.is_error:
        ended = "succeeded"
    elif outcome.error_type == CUT:
        ended = "started and was cut before it finished (it may have acted)"
    else:
        ended = f"failed ({outcome.error_type or 'error'})"
    key = outcome.idempotency_key
    return f"{outcome.tool} {ended}" + ("" if key is None else f" (key {shown(key)})")
