"""A step whose share runs short waits for its siblings in flight to give back what they
did not spend, rather than end ``budget_exhausted`` with money unspent.

A top-up drew only what no step in flight held, at once: a long tool loop beside
nineteen quick steps (all sent together, each holding an even share) ended
``budget_exhausted`` and the run ``partial`` on several times what the run needs, its
siblings' unspent shares given back only after it had given up. A step that cannot top
up now waits while a sibling holding a share is still running (it will report and give
back what it did not spend); the last step that could give anything back never waits,
so no run waits on itself."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import Budget, BudgetToppedUp, Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, Price, ScriptedModel, text_response
from regiment.tools import tool

from .limits import budget_of, kept_to_max_tokens, spent_of
from .test_budget_fan_out import Probe

WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token
WIDE: list[tuple[int, list[int]]] = [
    (6, []),
    *([(1, [])] * 19),
]  # one long tool loop beside nineteen one-tool steps


def _honest(probe: Probe) -> ScriptedModel:
    async def reply(request: ModelRequest) -> ModelResponse:
        said = await probe.brain(request)
        if isinstance(said, str) and said.startswith("did part") and not said.endswith("6"):
            await anyio.sleep(0.05)  # a quick step's answer: in flight as the long loop runs
        response = said if isinstance(said, ModelResponse) else text_response(said)
        return kept_to_max_tokens(request, response)

    return ScriptedModel(reply, price=WHOLE)


def _team(probe: Probe, budget: Budget, concurrency: int = 20) -> Team:
    async def probe_tool(n: int) -> int:
        """Probe."""
        probe.bodies += 1
        return n

    model = _honest(probe)
    tools = [tool(name="probe")(probe_tool)]
    return Team(
        name="t",
        planner=Planner(model=model, max_steps=20),
        workers=[Worker(name="w", description="w", model=model, tools=tools, max_iterations=8)],
        budget=budget,
        concurrency=concurrency,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["tokens", "usd"])
async def test_a_long_step_beside_nineteen_quick_ones_completes_on_twice_its_need(
    limit: str,
) -> None:
    need = spent_of(await _team(Probe(WIDE), Budget()).run("goal"), limit)
    probe = Probe(WIDE)
    amount = need * 2
    result = await _team(probe, budget_of(limit, amount)).run("goal")
    # It ended partial, s1 budget_exhausted, with most of the budget unspent.
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert len(result.committed) == len(WIDE)
    assert sorted(probe.answered) == sorted(
        f"part {i} wants {w}" for i, (w, _) in enumerate(WIDE, 1)
    )
    assert spent_of(result, limit) <= amount
    assert "s1" in {e.step_id for e in result.events if isinstance(e, BudgetToppedUp)}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=12, deadline=None)
@given(
    wants=st.lists(st.integers(0, 6), min_size=2, max_size=12),
    limit=st.sampled_from(["tokens", "usd"]),
    fraction=st.integers(10, 400),
)
def test_wide_fan_outs_never_spend_past_the_limit_and_complete_on_twice_their_need(
    backend: str, wants: list[int], limit: str, fraction: int
) -> None:
    steps: list[tuple[int, list[int]]] = [(w, []) for w in wants]
    unlimited = anyio.run(_team(Probe(steps), Budget()).run, "goal", backend=backend)
    need = spent_of(unlimited, limit)
    for amount in (need * fraction // 100, need * 2):
        result = anyio.run(
            _team(Probe(steps), budget_of(limit, amount)).run, "goal", backend=backend
        )
        assert spent_of(result, limit) <= amount
        if amount == need * 2:
            assert (result.status, result.budget_exhausted) == ("completed", None)
            assert sorted(result.committed) == sorted(unlimited.committed)
        elif result.status == "partial":
            assert result.budget_exhausted in (limit, "model_calls")
