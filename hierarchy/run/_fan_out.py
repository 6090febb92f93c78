"""Which ready steps a run dispatches now, and the allowance each one takes.

A fan-out splits what is left *when it begins* (``BudgetLedger.split``), so no
step's share shrinks because a sibling reserved first. With a token or money
budget it also sends no step whose share cannot pay for its first model call
(estimated offline; its least cost at its model's price): it sends fewer steps at
once, so each share is larger, and the rest wait for what the running ones leave;
if not even one fits, the run is out of that budget (a nested run first draws what
the step needs through the step it serves: ``draw_to_start``). A step sent with a
share that cannot fit would only end at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat

from regiment.hierarchy._budget import BudgetLedger, BudgetLimit, Share
from regiment.hierarchy._messages import AssignStep, StepContext
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy._top_up import TopUps, afford
from regiment.hierarchy.plan._plan import PlanStep
from regiment.hierarchy.run._changes import StepSent
from regiment.hierarchy.run._runtime import TeamRuntime
from regiment.hierarchy.run._versions import PlanVersions
from regiment.hierarchy.workers._loop import opening
from regiment.hierarchy.workers._worker import Worker, WorkerSpec
from regiment.models import ModelRequest, Price, estimate_tokens, least_cost, usd_text

__all__ = ("draw_to_start", "reserve_fan_out", "unsent_detail")

_NO_SHARES: Iterable[Share | None] = repeat(None)  # a fan-out under no limit: one each


def reserve_fan_out(
    *,
    team: TeamRuntime,
    versions: PlanVersions,
    ledger: BudgetLedger,
    run_id: str,
    goal: str,
    ready: Sequence[PlanStep],
    pending: int,
) -> tuple[list[StepSent], BudgetLimit | None]:
    """Reserve allowances for as many of ``ready`` as the budget lets start now.

    ``pending`` counts the current plan's steps still to be sent (the ready ones and
    those after them): what is left is shared between all of them, so steps sent later
    are not starved by larger shares held by steps sent earlier.

    Returns the steps to send (each reserved under ``(version, step id, attempt)``, the
    key a ``ReportArrived`` releases), and the budget field that stopped the others."""
    version, outline = versions.version, versions.outline_made or versions.outline()  # (#22)
    ways, short_of = max(len(ready), pending), None
    # Each step's context is made as it is sent, up front only to estimate tokens (#22).
    contexts: list[StepContext] | None = None
    if ledger.counts_tokens or ledger.holds_money:  # estimating costs a pass over prompts
        contexts = [_context(goal, outline, versions, step) for step in ready]
        needs = _needs(team, ready, contexts, money=ledger.holds_money)
        ways, short_of = _ways_that_fit(ledger, needs, ways)
    caps, free = team.model_call_caps, ledger.free  # free: no limit, nothing to split
    shares = _NO_SHARES if free is not None else ledger.split(ways, len(ready))
    sends: list[StepSent] = []
    for index, (step, share) in enumerate(zip(ready, shares, strict=False)):
        worker, deps = step.worker or team.default_worker, step.depends_on  # (#22)
        key, cap = (version, step.id, 1), caps[worker]
        if free is None or (allowance := free.get(cap)) is None:  # else reserved before
            allowance = ledger.reserve(key, model_calls_cap=cap, keep_model_calls=1, share=share)
        if allowance is None:
            break
        calls = allowance.model_calls
        if calls is not None and calls < cap and _others_running(ledger, key):
            ledger.release(key)  # wait for what the running steps give back
            break
        assign = AssignStep(
            run_id=run_id,
            plan_version=version,
            step=step,
            context=StepContext(
                goal=goal,
                plan_outline=outline,
                dependency_outputs=versions.carried_outputs(deps) if deps else (),
            )
            if contexts is None
            else contexts[index],
            attempt=1,
            allowance=allowance,
        )
        sends.append(StepSent(assign, worker))
    if len(sends) == len(ready):
        return sends, None
    if ways < len(ready) and len(sends) == ways and short_of is not None:
        return sends, short_of
    return sends, ledger.exhausted(model_calls_needed=2) or "model_calls"


def draw_to_start(
    *,
    team: TeamRuntime,
    versions: PlanVersions,
    ledger: BudgetLedger,
    top_ups: TopUps,
    goal: str,
    step: PlanStep,
) -> bool:
    """A nested run with nothing in flight that cannot send its next ready ``step`` draws
    through the step it serves, under the run above's rule, what ``step`` needs to start:
    a model call (and the one kept for the synthesis), its first call's estimated input
    and least cost (its calls draw the rest as they go, as any step's do). Whether it can
    now start; a run that is not nested draws nothing (it is out of that budget)."""
    if top_ups.above is None:
        return False
    tokens = usd = 0
    if ledger.counts_tokens or ledger.holds_money:
        worker = team.workers[step.worker or team.default_worker]
        context = _context(goal, versions.outline(), versions, step)
        needed = first_call_tokens(worker, team.planner.prompts, step, context)
        tokens = needed if ledger.counts_tokens else 0
        usd = max(1, first_call_cost(worker, needed)) if ledger.holds_money else 0
    limit = afford(ledger, top_ups, model_calls_needed=2, tokens_needed=tokens, usd_needed=usd)
    return limit is None


def unsent_detail(
    *,
    team: TeamRuntime,
    versions: PlanVersions,
    ledger: BudgetLedger,
    goal: str,
    step: PlanStep,
    limit: BudgetLimit,
) -> str:
    """Why ``step`` could not be sent, ``limit`` being in the way (the run then ends on it):
    what its first call needs, and what the run has left of that field."""
    head = f"no budget left to dispatch step {step.id}"
    if limit not in ("tokens", "input_tokens", "usd"):
        return head
    worker = team.workers[step.worker or team.default_worker]
    context = _context(goal, versions.outline(), versions, step)
    needed = first_call_tokens(worker, team.planner.prompts, step, context)
    if limit == "usd":
        left, cost = ledger.micro_usd_left() or 0, first_call_cost(worker, needed)
        return f"{head}: its first call costs at least about {usd_text(cost)}, and {usd_text(left)} is left"
    room = ledger.room(limit)
    left = 0 if room is None else room[1]
    return f"{head}: its first call needs about {needed} {limit.replace('_', ' ')}, and {left} are left"


def _context(goal: str, outline: str, versions: PlanVersions, step: PlanStep) -> StepContext:
    """What a step is told besides its own text: the goal, the plan, what it depends on."""
    return StepContext(
        goal=goal,
        plan_outline=outline,
        dependency_outputs=versions.carried_outputs(step.depends_on),
    )


def _others_running(ledger: BudgetLedger, key: tuple[int, str, int]) -> bool:
    """Whether other steps of the plan version of ``key`` hold reservations.

    A step that got fewer model calls than its cap (a step out of them ends the run
    ``partial``) waits for those: they give back what they do not use when they
    report. With none running, it goes with what is left. Steps of an older version
    being cancelled do not count, so they never hold up the new plan. (A scan, but
    only at the edge of a model call limit, and once per fan-out.)
    """
    version = key[0]
    return any(
        isinstance(other, tuple) and other[0] == version and other != key
        for other in ledger.reserved
    )


def _needs(
    team: TeamRuntime, ready: Sequence[PlanStep], contexts: Sequence[StepContext], *, money: bool
) -> list[tuple[int, int]]:
    """Each ready step's first call: its estimated input tokens, and what it costs at
    least (``money``; 0 for a sub-team, whose first call its own run checks)."""
    workers, prompts, default = team.workers, team.planner.prompts, team.default_worker
    needs: list[tuple[int, int]] = []
    for step, context in zip(ready, contexts, strict=True):
        worker = workers[step.worker or default]
        tokens = first_call_tokens(worker, prompts, step, context)
        needs.append((tokens, first_call_cost(worker, tokens) if money else 0))
    return needs


def _ways_that_fit(
    ledger: BudgetLedger, needs: Sequence[tuple[int, int]], pending: int
) -> tuple[int, BudgetLimit | None]:
    """How many ways to split what is left so that the first steps' shares each pay
    for their first call (its tokens, and its least cost in money); the first
    ``min(ways, len(needs))`` are sent. With fewer than ``len(needs)``: the field that
    held the others back."""
    short_of: BudgetLimit | None = None
    for ways in range(pending, 0, -1):
        shares = ledger.split(ways, len(needs))
        missing = [_short_of(s, n) for s, n in zip(shares, needs, strict=False)]
        if not any(missing):
            return ways, short_of
        short_of = short_of or next(m for m in missing if m)
    return 0, short_of


def _short_of(share: Share, need: tuple[int, int]) -> BudgetLimit | None:
    """The field of ``share`` that cannot pay for a first call of ``need`` (estimated
    input tokens, least cost in micro-dollars); ``None`` if it pays."""
    tokens, cost = need
    if share.tokens is not None and share.tokens < tokens:
        return "tokens"
    if share.input_tokens is not None and share.input_tokens < tokens:
        return "input_tokens"
    if share.micro_usd is not None and share.micro_usd < max(1, cost):
        return "usd"
    return None


def first_call_cost(worker: WorkerSpec, tokens: int) -> int:
    """What a step's first call of ``tokens`` estimated input costs at least (its input
    and one output token at its worker's model's price; 0 unpriced or a sub-team)."""
    price = getattr(worker.model, "price", None) if isinstance(worker, Worker) else None
    return least_cost(price.rates(), tokens) if isinstance(price, Price) else 0


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
