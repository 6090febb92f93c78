"""What the budget cannot pay for while steps a replan cancelled still hold their shares
waits for them to report: the critique check, and the new plan's first step.

A step failed its check while seven siblings sat in a tool call that takes a while to
wind down once cancelled (a shielded cleanup). The replan went ahead, its step was
committed, and the critique check ran at once, against what the cancelled siblings still
held: the run ended ``partial`` ("no budget left to critique round 1 and then answer"),
unjudged, with most of its budget unspent. With a little less budget the new plan's step
was held back for those shares, and nothing sent it once they were given back: the run
never ended."""

from __future__ import annotations

import json
import re

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    Check,
    Critic,
    PlanCreated,
    Planner,
    RunCompleted,
    RunResult,
    StaleReportDropped,
    StepCompleted,
    Team,
    Worker,
)
from regiment.hierarchy.events import Event
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

from .limits import PLAN, REPLAN, SIBLINGS, WHOLE, budget_of, kept_to_max_tokens, never, spent_of

pytestmark = pytest.mark.anyio

PASSED = json.dumps({"passed": True, "feedback": ""})


class Digs:
    """One run's digging: the siblings' digs, and when their cleanup may end."""

    def __init__(self) -> None:
        self.started = 0
        self.all_started = anyio.Event()
        self.released = anyio.Event()


def _reply(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response(PLAN)
    if request.role == "replanner":
        return text_response(REPLAN)
    if request.role == "critic":
        return text_response(PASSED)
    if request.role == "synthesizer":
        return text_response("the answer")
    found = re.search(r"Your step \((\w+)\)", request.messages[0].text)
    assert found is not None
    step = found.group(1)
    if step == "s0" and len(request.messages) == 1:
        return tool_call_response("look", {"n": 1})  # once every sibling digs
    if step.startswith("s") and step != "s0":
        return tool_call_response("dig", {"n": 1})
    return text_response("looked")


def _honest(request: ModelRequest) -> ModelResponse:
    """Keeps to ``max_tokens`` as a real model does."""
    response = _reply(request)
    return kept_to_max_tokens(request, response)


def _team(budget: Budget, digs: Digs) -> Team:
    @tool
    async def dig(n: int) -> int:
        """Dig; once cancelled, clean up until told to stop."""
        digs.started += 1
        if digs.started == SIBLINGS:
            digs.all_started.set()
        try:
            await digs.released.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await digs.released.wait()
        return n

    @tool
    async def look(n: int) -> int:
        """Look, once every dig has begun."""
        await digs.all_started.wait()
        return n

    model = ScriptedModel(_honest, price=WHOLE)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[
            Worker(
                name="w",
                description="w",
                model=model,
                tools=[dig, look],
                max_concurrent_steps=SIBLINGS + 1,
            )
        ],
        checks={"never": Check(description="never passes", predicate=never)},
        critic=Critic(),
        budget=budget,
        concurrency=SIBLINGS + 1,
    )


def _releases(event: Event, on: str) -> bool:
    if isinstance(event, (BudgetExhausted, RunCompleted)):
        return True
    if on == "r1 committed":
        return isinstance(event, StepCompleted) and event.step_id == "r1"
    return isinstance(event, PlanCreated) and event.plan.version == 2


async def _run(budget: Budget, on: str = "r1 committed") -> RunResult:
    """Run the goal; the cancelled digs finish their cleanup once ``on`` is seen."""
    digs = Digs()
    with anyio.fail_after(60):  # the new plan's step held back for good: it never ended
        async with _team(budget, digs).start() as running, running.stream("goal") as events:
            async for event in events:
                if _releases(event, on):
                    digs.released.set()
                if isinstance(event, RunCompleted):
                    return event.result
    raise AssertionError("no RunCompleted")


# How much more than a run with no limit spends: room for the new plan's step beside the
# shares the cancelled siblings hold (usd 2.5 until the replan's request listed the calls
# of the rejected step, 2.7 until it listed those of the seven siblings it cuts: a longer
# request, a larger part of the run's money).
@pytest.mark.parametrize(("limit", "times"), [("tokens", 2.8), ("usd", 2.8)])
async def test_the_critique_check_waits_for_the_shares_cancelled_steps_held(
    limit: str, times: float
) -> None:
    need = spent_of(await _run(Budget()), limit)
    amount = int(need * times)
    result = await _run(budget_of(limit, amount))
    # It ended partial: "no budget left to critique round 1 and then answer".
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert "critic" in result.usage_by_role
    assert result.committed == ("r1",)
    kinds = [e for e in result.events if isinstance(e, (StepCompleted, StaleReportDropped))]
    assert isinstance(kinds[0], StepCompleted)  # r1 was committed while they held their shares
    assert len(kinds) == 1 + SIBLINGS
    assert spent_of(result, limit) <= amount


@pytest.mark.parametrize(("limit", "times"), [("tokens", 2.2), ("usd", 2.2)])
async def test_a_step_held_back_for_cancelled_steps_shares_is_sent_as_they_report(
    limit: str, times: float
) -> None:
    need = spent_of(await _run(Budget()), limit)
    amount = int(need * times)
    result = await _run(budget_of(limit, amount), on="plan v2")
    # It never ended: r1 waited for the siblings' shares, and nothing sent it after.
    assert (result.status, result.budget_exhausted, result.committed) == (
        "completed",
        None,
        ("r1",),
    )
    kinds = [e for e in result.events if isinstance(e, (StepCompleted, StaleReportDropped))]
    assert isinstance(kinds[-1], StepCompleted)  # sent once the siblings reported
    assert len(kinds) == 1 + SIBLINGS
    assert spent_of(result, limit) <= amount
