"""A step's share of its run's budget, checked before each model call and tool call:
topped up by its run when short (in-process, or across the hop from a Ray replica), and
each reply held to what the share has left."""

from __future__ import annotations

from regiment.hierarchy._allowance import Rates, over_allowance
from regiment.hierarchy._give_way import given_up
from regiment.hierarchy._messages import AssignStep, BudgetLimit, StepAllowance, StepReport
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._top_up import call_need, reply_room
from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import ModelRequest

__all__ = ("tool_call_limit", "tool_calls_across", "within_allowance")


async def _topped_up(
    assign: AssignStep,
    progress: StepProgress,
    request: ModelRequest,
    rates: Rates | None,
    out: tuple[BudgetLimit, str],
) -> tuple[BudgetLimit, str] | None:
    """Why the step's next call must not start (``out``, from ``over_allowance``), even
    once its run has topped its share up with what it can spare (``TopUps``)."""
    if progress.fence is None or progress.fenced(assign.plan_version):
        return out  # no run to ask, or its plan is over
    held, calls, usage = (
        progress.allowance or assign.allowance,
        progress.model_calls,
        progress.usage,
    )
    need = call_need(held, calls, usage, request, rates)
    if (grown := await progress.fence.top_ups.grant_waiting(_key(assign), need)) is None:
        return out
    progress.allowance = grown
    return over_allowance(grown, calls, usage, request, "the next call", rates)


async def _short(
    assign: AssignStep,
    progress: StepProgress,
    request: ModelRequest,
    rates: Rates | None,
    out: tuple[BudgetLimit, str],
) -> tuple[BudgetLimit, str] | None:
    """``_topped_up``; for a step on a Ray replica, whose run is in the team's process,
    that run is asked across the hop (``progress.ask_more``) instead."""
    still = await _topped_up(assign, progress, request, rates, out)
    ask = progress.ask_more
    if still is None or ask is None or progress.stopped:
        return still
    held, calls, usage = (
        progress.allowance or assign.allowance,
        progress.model_calls,
        progress.usage,
    )
    if (grown := await ask(call_need(held, calls, usage, request, rates))) is None:
        return still
    progress.allowance = grown
    return over_allowance(grown, calls, usage, request, "the next call", rates)


async def tool_calls_across(progress: StepProgress, limit: int, asked: int) -> int:
    """``tool_call_limit`` for a step on a Ray replica: its run is asked across the hop."""
    ask = progress.ask_more
    short = progress.tool_calls + asked - limit
    if ask is None or short <= 0 or progress.stopped:
        return limit
    grown = await ask({"tool_calls": (1, short)})
    if grown is None:
        return limit
    progress.allowance = grown
    return limit if grown.tool_calls is None else grown.tool_calls


async def within_allowance(
    assign: AssignStep,
    progress: StepProgress,
    request: ModelRequest,
    caller: ModelCaller,
    worker: str,
) -> tuple[ModelRequest, StepReport | None]:
    """The step's next call with its reply held to what the step's share has left of its
    output tokens (and tokens), so steps at width cannot together spend past their run's
    limit; or the step's report when its share (topped up if its run can spare some)
    cannot pay for the call."""
    rates = None
    if (assign.allowance.micro_usd is not None) and (price := caller.price) is not None:
        rates = price.rates()
    held = progress.allowance or assign.allowance
    out = over_allowance(
        held, progress.model_calls, progress.usage, request, "the next call", rates
    )
    fence = progress.fence  # in a nested run: the step it serves may have given way
    if out is None and fence is not None and fence.top_ups.above and given_up(fence.top_ups):
        out = _gave_way(held)
    if out is not None:  # short: its run may top the share up
        out = await _short(assign, progress, request, rates, out)
    if out is None:
        held = progress.allowance or held
        if held.output_tokens is None and held.tokens is None and held.micro_usd is None:
            return request, None  # the usual case: no reply to hold
        room = reply_room(held, progress.usage, request, rates)
        if (capped := caller.capped(request, room)) is not None:
            return capped, None
        limit: BudgetLimit = "tokens" if held.output_tokens is None else "output_tokens"
        if held.micro_usd is not None:
            limit = "usd"
        out = (
            limit,
            (
                f"the step's share has {room} tokens left for the next reply, too few for a "
                "call that thinks (thinking_budget is at least 1024, and below max_tokens)"
            ),
        )
    return request, exhausted(progress, assign, worker, out)


def _gave_way(held: StepAllowance) -> tuple[BudgetLimit, str]:
    """Why a step of a nested run ends when the step that run serves gave way (its run
    could not top it up, nor its siblings, which wait for what it gives back)."""
    limit: BudgetLimit = "usd" if held.micro_usd is not None else "tokens"
    if held.micro_usd is None and held.tokens is None:
        limit = "output_tokens" if held.output_tokens is not None else "model_calls"
    return limit, "the run above ran short and its first steps go first: this team gives way"


def _key(assign: AssignStep) -> tuple[int, str, int]:
    """The key its run reserved the step's share under."""
    return assign.plan_version, assign.step.id, assign.attempt


def tool_call_limit(assign: AssignStep, progress: StepProgress, asked: int) -> int | None:
    """How many tool calls the step may have made once ``asked`` more are run: its
    share, topped up by its run if that is short and the run can spare some."""
    limit = (progress.allowance or assign.allowance).tool_calls
    if limit is None or progress.tool_calls + asked <= limit or progress.fence is None:
        return limit  # (a fenced step starts no tool: _call_tools has ended it)
    short = progress.tool_calls + asked - limit
    grown = progress.fence.top_ups.grant(_key(assign), {"tool_calls": (1, short)})
    if grown is None:
        return limit
    progress.allowance = grown
    return grown.tool_calls


def exhausted(
    progress: StepProgress, assign: AssignStep, worker: str, out: tuple[BudgetLimit, str]
) -> StepReport:
    """The report of a step whose share (topped up as far as its run could) ran out."""
    return progress.report(assign, worker, "budget_exhausted", error=out[1], exhausted=out[0])
