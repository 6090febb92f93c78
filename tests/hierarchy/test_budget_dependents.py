"""A step's top-up keeps nothing back for the steps that wait on it (tokens, money, model
calls): they cannot start before it reports, nor at all if it runs out of budget.

Every step still to be sent kept an even part of what was unspent, so the first step of
a sequential plan (s1, then s2 after it, then s3) could never draw on the later steps'
parts: a long first step ended ``budget_exhausted`` and the run ``partial`` with nothing
committed, on twice the tokens (or money) the whole run needs, and with most of it
unspent. The steps that wait on it would never have run. Steps that do not wait on it
and the synthesis keep their parts, as before, and so do tool calls (a step short of
tool calls answers from the results it has, so each later step keeps its part). A
top-up draws only what no step holds, so nothing spends past the limit however many
steps run at once."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import Budget, BudgetToppedUp, Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    text_response,
)
from regiment.tools import tool

from .limits import budget_of, kept_to_max_tokens, spent_of
from .test_budget_fan_out import Probe

WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token
CHAIN = [(5, []), (0, [1]), (0, [2])]  # s1 calls its tool five times; s2 after it; s3 after s2


def _honest(probe: Probe, quick: float = 0.0) -> ScriptedModel:
    """The probe's brain, priced, keeping to ``max_tokens`` as a real model does; with
    ``quick``, a step's answer (other than a part wanting 6) takes that many seconds, so
    it is in flight as a long tool loop runs."""

    async def reply(request: ModelRequest) -> ModelResponse:
        said = await probe.brain(request)
        if quick and isinstance(said, str) and said.startswith("did part") and said[-1] != "6":
            await anyio.sleep(quick)
        response = said if isinstance(said, ModelResponse) else text_response(said)
        return kept_to_max_tokens(request, response)

    return ScriptedModel(reply, price=WHOLE)


def _team(
    probe: Probe,
    budget: Budget,
    concurrency: int = 8,
    *,
    steps: int = 10,
    iterations: int = 6,
    quick: float = 0.0,
) -> Team:
    async def probe_tool(n: int) -> int:
        """Probe."""
        probe.bodies += 1
        return n

    model = _honest(probe, quick)
    tools = [tool(name="probe")(probe_tool)]
    worker = Worker(name="w", description="w", model=model, tools=tools, max_iterations=iterations)
    return Team(
        name="t",
        planner=Planner(model=model, max_steps=steps),
        workers=[worker],
        budget=budget,
        concurrency=concurrency,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["tokens", "usd"])
async def test_the_first_step_of_a_sequence_draws_on_the_parts_of_the_steps_after_it(
    limit: str,
) -> None:
    free = Probe(CHAIN)
    need = spent_of(await _team(free, Budget()).run("goal"), limit)
    probe = Probe(CHAIN)
    amount = need * 17 // 10
    result = await _team(probe, budget_of(limit, amount)).run("goal")
    # It ended partial, s1 budget_exhausted, nothing committed, most of it unspent.
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert result.committed == ("s1", "s2", "s3")
    assert probe.bodies == 5
    assert spent_of(result, limit) <= amount
    assert "s1" in {e.step_id for e in result.events if isinstance(e, BudgetToppedUp)}


@pytest.mark.anyio
async def test_tool_calls_are_still_kept_for_the_steps_after() -> None:
    # A step short of tool calls answers from what it has: each later step keeps its
    # part, so all three run a tool, however many the first asks for.
    probe = Probe([(2, []), (1, [1]), (1, [2])])
    result = await _team(probe, Budget(tool_calls=3)).run("goal")
    assert probe.bodies == 3
    assert [sum(not o.is_error for o in r.tool_outcomes) for r in result.steps] == [1, 1, 1]


_steps = st.lists(
    st.tuples(st.integers(0, 4), st.lists(st.integers(1, 6), max_size=2)),
    min_size=1,
    max_size=6,
).map(lambda steps: [(w, sorted({d for d in deps if d <= i})) for i, (w, deps) in enumerate(steps)])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25, deadline=None)
@given(
    steps=_steps,
    limit=st.sampled_from(["tokens", "usd"]),
    fraction=st.integers(10, 300),
    concurrency=st.integers(1, 6),
)
def test_dependent_fan_outs_never_spend_past_the_limit(
    backend: str, steps: list[tuple[int, list[int]]], limit: str, fraction: int, concurrency: int
) -> None:
    free = Probe(steps)
    unlimited = anyio.run(_team(free, Budget(), concurrency).run, "goal", backend=backend)
    amount = spent_of(unlimited, limit) * fraction // 100
    probe = Probe(steps)
    result = anyio.run(
        _team(probe, budget_of(limit, amount), concurrency).run, "goal", backend=backend
    )
    assert spent_of(result, limit) <= amount
    if result.status == "partial":
        assert result.budget_exhausted in (limit, "model_calls")
    else:
        # (in the order they finished: a step that waited for a top-up finishes later)
        assert sorted(result.committed) == sorted(unlimited.committed)
