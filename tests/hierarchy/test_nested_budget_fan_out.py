"""Nested teams run side by side under a shared budget a little short of their need: the
first sent finish, the rest give way and end ``budget_exhausted`` with what they did kept.

Five nested teams (three tool-loop steps each) under 90% of their whole need committed no
step at all: a nested run's steps drew on the run above without waiting, every nested run
ran short at about the same time, and the first to give up ended the run above's budget
(``TopUps.stop``), so every other nested run was refused what the first gave back. Now a
nested run's step that cannot be topped up waits on the run above's steps as one of them
(``TopUps._marks``); when none there can give back, the last sent gives way
(``TopUps._refuse``: its nested run's steps end at their next call, and it gives back
what it holds); and a step that ran out lets its siblings in flight draw on what it gave
back (``TopUps.drain``)."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import Budget, Planner, RunResult, Team, TeamWorker, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

from .brains import plan_json
from .limits import WHOLE, budget_of, kept_to_max_tokens, spent_of


@tool
def probe(n: int) -> str:
    """Probe."""
    return "found " * 40


def _results(request: ModelRequest) -> int:
    return sum(isinstance(part, ToolResultPart) for m in request.messages for part in m.parts)


def _inner(i: int, steps: int, calls: int) -> Team:
    """A nested team: its plan of ``steps`` steps, each ``calls`` probes then an answer."""

    def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            said: ModelResponse | str = plan_json(
                *({"id": f"c{j}", "description": f"dig {i}.{j}"} for j in range(steps))
            )
        elif request.role == "synthesizer":
            said = f"team {i} answers"
        elif (n := _results(request)) < calls:
            said = tool_call_response("probe", {"n": n})
        else:
            said = f"dug {i} " + "deep " * 10
        response = said if isinstance(said, ModelResponse) else text_response(said)
        return kept_to_max_tokens(request, response)

    model = ScriptedModel(brain, price=WHOLE)
    worker = Worker(name="d", description="digs", model=model, tools=[probe], max_iterations=12)
    return Team(name=f"inner{i}", planner=Planner(model=model), workers=[worker], concurrency=steps)


def _outer(budget: Budget, teams: int = 5, steps: int = 3, calls: int = 3) -> Team:
    """``teams`` nested teams, one step each, all sent at once."""
    plan = plan_json(
        *({"id": f"s{i}", "description": f"research {i}", "worker": f"t{i}"} for i in range(teams))
    )

    def brain(request: ModelRequest) -> ModelResponse:
        said = plan if request.role == "planner" else "the answer"
        return kept_to_max_tokens(request, text_response(said))

    workers = [
        TeamWorker(name=f"t{i}", description=f"team {i}", team=_inner(i, steps, calls))
        for i in range(teams)
    ]
    model = ScriptedModel(brain, price=WHOLE)
    return Team(
        name="outer",
        planner=Planner(model=model, max_steps=8),
        workers=workers,
        budget=budget,
        concurrency=teams,
    )


def _kept(result: RunResult, amount: int, limit: str, teams: int) -> None:
    """What holds of any run under a budget: within it, each step done and committed, or
    ``budget_exhausted`` with the nested steps it finished kept as facts."""
    assert spent_of(result, limit) <= amount
    assert result.status in ("completed", "partial")
    assert {r.step_id for r in result.steps} == {f"s{i}" for i in range(teams)}
    for report in result.steps:
        assert report.status in ("done", "budget_exhausted"), report.error
        assert (report.step_id in result.committed) == (report.status == "done")


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["usd", "tokens"])
@pytest.mark.parametrize("percent", [90, 95])
async def test_nested_teams_on_less_than_their_need_let_the_first_finish(
    limit: str, percent: int
) -> None:
    need = spent_of(await _outer(Budget()).run("goal"), limit)
    amount = need * percent // 100
    with anyio.fail_after(60):
        result = await _outer(budget_of(limit, amount)).run("goal")
    _kept(result, amount, limit, 5)
    # None was committed: each nested run ran short, and the first to give up ended the
    # run's top-ups, so every other was refused what it gave back.
    assert len(result.committed) >= {90: 1, 95: 2}[percent]
    assert "s0" in result.committed  # the first sent goes first
    assert (result.status, result.budget_exhausted) == ("partial", limit)
    # What a team that gave way did is kept: its report carries its spend and its facts.
    given_way = [r for r in result.steps if r.status == "budget_exhausted"]
    assert given_way
    assert all(r.error and "ran out of budget" in r.error for r in given_way)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=10, deadline=None)
@given(
    teams=st.integers(1, 5),
    steps=st.integers(1, 3),
    calls=st.integers(0, 3),
    limit=st.sampled_from(["usd", "tokens"]),
    percent=st.integers(20, 220),
)
def test_nested_fan_outs_never_hang_nor_spend_past_the_limit(
    backend: str, teams: int, steps: int, calls: int, limit: str, percent: int
) -> None:
    whole = anyio.run(_outer(Budget(), teams, steps, calls).run, "goal", backend=backend)
    amount = spent_of(whole, limit) * percent // 100

    async def run() -> RunResult:
        with anyio.fail_after(60):  # a run that waits on itself would hang here
            return await _outer(budget_of(limit, amount), teams, steps, calls).run("goal")

    result = anyio.run(run, backend=backend)
    if result.steps:  # (on a fifth of its need, the plan's call may not be afforded)
        _kept(result, amount, limit, teams)
    else:
        assert (result.status, result.budget_exhausted) == ("partial", limit)
    if percent >= 200:
        assert (result.status, result.budget_exhausted) == ("completed", None)
        assert sorted(result.committed) == sorted(whole.committed)
    elif result.status == "partial":
        assert result.budget_exhausted in (limit, "model_calls")


def _shared(budget: Budget, runs: int = 4, steps: int = 4) -> Team:
    """``runs`` steps sent at once to one nested team, whose worker runs 8 steps at once:
    the nested runs' ``steps`` steps each share its runners."""
    plan = plan_json(
        *({"id": f"s{i}", "description": f"research {i}", "worker": "t"} for i in range(runs))
    )

    def brain(request: ModelRequest) -> ModelResponse:
        said = plan if request.role == "planner" else "the answer"
        return kept_to_max_tokens(request, text_response(said))

    model = ScriptedModel(brain, price=WHOLE)
    shared = TeamWorker(name="t", description="a team", team=_inner(0, steps, 3))
    return Team(
        name="outer",
        planner=Planner(model=model, max_steps=8),
        workers=[shared],
        budget=budget,
        concurrency=runs,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("limit", ["usd", "tokens"])
@pytest.mark.parametrize("percent", [30, 60, 90])
async def test_nested_runs_that_share_a_workers_runners_do_not_wait_on_each_other(
    limit: str, percent: int
) -> None:
    # Four nested runs of one team, four steps each, on a worker that runs 8 at once: the
    # two runs whose steps ran, short of budget, waited for the two whose steps were
    # queued behind them (those counted as steps that would give back), and the run hung.
    need = spent_of(await _shared(Budget()).run("goal"), limit)
    amount = need * percent // 100
    with anyio.fail_after(60):  # a run that waits on itself would hang here
        result = await _shared(budget_of(limit, amount)).run("goal")
    _kept(result, amount, limit, 4)
    assert (result.status, result.budget_exhausted) == ("partial", limit)
    # The run that got the runners first finishes (which one is the nested planners' race).
    assert result.committed or percent < 90
