"""Which ready steps a run dispatches now, and the allowance each one takes.

A fan-out splits what is left *when it begins* (``BudgetLedger.split``), so no
step's share shrinks because a sibling reserved first. With a token budget it
also sends no step whose share cannot pay for its first model call (estimated
offline): it sends fewer steps at once, so each share is larger, and the rest
wait for what the running ones leave; if not even one fits, the run is out of
tokens. A step sent with a share that cannot fit would only end at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._messages import StepAllowance, StepContext
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._versions import PlanVersions
from regiment.hierarchy.workers._loop import opening
from regiment.hierarchy.workers._worker import Worker, WorkerSpec
from regiment.models import ModelRequest, estimate_tokens

__all__ = ("Dispatch", "reserve_fan_out")


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One step to send, with its reserved allowance."""

    step: PlanStep
    worker: WorkerSpec
    context: StepContext
    allowance: StepAllowance


def reserve_fan_out(
    *,
    team: TeamRuntime,
    versions: PlanVersions,
    ledger: BudgetLedger,
    goal: str,
    ready: Sequence[PlanStep],
    pending: int,
) -> tuple[list[Dispatch], BudgetLimit | None]:
    """Reserve allowances for as many of ``ready`` as the budget lets start now.

    ``pending`` counts the current plan's steps still to be sent (the ready ones
    and those after them): what is left is shared between all of them, so steps
    sent later are not starved by larger shares held by steps sent earlier.

    Returns:
        The steps to send, and, when some of ``ready`` could not be sent, the
        budget field that stopped them.
    """
    workers = team.workers
    picked = [(step, workers[step.worker or next(iter(workers))]) for step in ready]
    contexts = [_context(versions, goal, step) for step, _ in picked]
    # Estimating costs a pass over the prompts and tool schemas: only a token budget needs it.
    needs = (
        [
            first_call_tokens(worker, team.planner.prompts, step, context)
            for (step, worker), context in zip(picked, contexts, strict=True)
        ]
        if ledger.budget.tokens is not None
        else []
    )
    ways = _ways_that_fit(ledger, needs, max(len(ready), pending))
    version = versions.version
    out: list[Dispatch] = []
    for (step, worker), context, share in zip(picked, contexts, ledger.split(ways), strict=False):
        allowance = ledger.reserve(
            f"{version}/{step.id}/1",  # version/step/attempt: a ReportArrived releases it
            model_calls_cap=worker.step_model_calls,
            keep_model_calls=1,
            share=share,
        )
        if allowance is None:
            break
        out.append(Dispatch(step, worker, context, allowance))
    if len(out) == len(ready):
        return out, None
    if ways < len(ready) and len(out) == ways:
        return out, "tokens"
    return out, ledger.exhausted(model_calls_needed=2) or "model_calls"


def _ways_that_fit(ledger: BudgetLedger, needs: Sequence[int], pending: int) -> int:
    """How many ways to split what is left so that the first steps' token shares
    each pay for their first call; the first ``min(ways, len(needs))`` are sent."""
    if ledger.budget.tokens is None:
        return pending
    for ways in range(pending, 0, -1):
        shares = ledger.split(ways)
        if all(s.tokens is None or s.tokens >= n for s, n in zip(shares, needs, strict=False)):
            return ways
    return 0


def _context(versions: PlanVersions, goal: str, step: PlanStep) -> StepContext:
    return StepContext(
        goal=goal,
        plan_outline=versions.outline(),
        dependency_outputs=tuple((d, versions.carried_output(d)) for d in step.depends_on),
    )


def first_call_tokens(
    worker: WorkerSpec, prompts: Prompts, step: PlanStep, context: StepContext
) -> int:
    """The estimated input tokens of a step's first model call (0 for a sub-team,
    whose first call is its own planner's and is checked by the child run)."""
    if not isinstance(worker, Worker):
        return 0
    system, first = opening(
        prompts, worker.name, worker.description, worker.system_prompt, step, context
    )
    request = ModelRequest(system=system, messages=(first,), tools=worker.toolset.definitions)
    return estimate_tokens(request)
