"""A money limit, ``Budget(usd=...)``: each response is priced at its model's ``Price``
(``Usage.micro_usd``), the run's money is reserved in shares, topped up, and each call's
reply held to what its share can pay at its model's output price, so steps at width
cannot together spend past the limit."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import (
    Budget,
    BudgetToppedUp,
    Critic,
    Planner,
    Ray,
    RunResult,
    Team,
    TeamWorker,
    Worker,
)
from regiment.hierarchy._budget import BudgetLedger
from regiment.hierarchy.run._config_hash import _config_parts
from regiment.models import AnthropicModel, Price, ScriptedModel, Usage, priced
from regiment.tools import Approve, tool

from .brains import Brain, plan_json
from .test_budget_fan_out import Probe
from .test_budget_top_up import _LONG_BESIDE_SHORT, _SHORT
from .test_budget_width import WANT, Wide, nested_wide

pytestmark = pytest.mark.anyio

# Whole micro-dollars a token (input 1, output 2): a run's cost is input + 2 x output.
WHOLE = Price(input=1.0, output=2.0)
CLAUDE = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def _cost(usage: Usage) -> int:
    """What ``usage`` costs at ``WHOLE`` (no rounding: whole micro-dollars a token)."""
    return usage.whole_input_tokens + 2 * usage.output_tokens


async def _wide(width: int, budget: Budget, price: Price = CLAUDE) -> tuple[RunResult, Wide]:
    wide = Wide(width)
    model = ScriptedModel(wide, price=price)
    team = Team(
        name="wide",
        planner=Planner(model=model, max_steps=width),
        workers=[Worker(name="w", description="does parts", model=model)],
        budget=budget,
        concurrency=width,
    )
    async with team.start() as running:
        return await running.run("do fifty parts"), wide


async def test_fifty_steps_at_once_spend_no_more_money_than_the_budget() -> None:
    unlimited, _ = await _wide(50, Budget())
    assert unlimited.usage.micro_usd > 200_000  # so the limit below binds
    result, wide = await _wide(50, Budget(usd=0.2))
    assert result.usage.micro_usd <= 200_000
    assert result.usage.usd <= 0.2
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    workers = [limit for role, limit in wide.max_tokens if role == "worker"]
    assert len(workers) == 50
    assert max(workers) < WANT  # each reply held to what its share could pay


async def test_each_response_is_charged_at_its_price() -> None:
    result, _ = await _wide(5, Budget(usd=10.0), WHOLE)
    assert result.status == "completed"
    assert result.usage.micro_usd == _cost(result.usage) > 0
    for role, usage in result.usage_by_role.items():
        assert usage.micro_usd == _cost(usage), role


async def test_a_roomy_money_budget_leaves_replies_as_asked() -> None:
    result, wide = await _wide(5, Budget(usd=100.0))
    assert result.status == "completed"
    assert {limit for role, limit in wide.max_tokens if role == "worker"} == {4096}


async def test_nested_teams_at_width_spend_no_more_money_than_the_run_above_allows() -> None:
    model = ScriptedModel(Wide(5), price=CLAUDE)
    team = nested_wide(model, Budget(usd=0.05))
    async with team.start() as running:
        result = await running.run("do parts of parts")
    assert result.usage.micro_usd <= 50_000
    assert (result.status, result.budget_exhausted) == ("partial", "usd")


class _PricedProbe(Probe):
    """``Probe``, its model priced at ``WHOLE``."""

    def team(self, budget: Budget, *, concurrency: int = 8, ask_at: int = -1) -> Team:
        @tool(requires_approval=lambda args: args["n"] == ask_at)
        async def probe(n: int) -> int:
            """Probe."""
            self.bodies += 1
            if self.hold is not None:
                await self.hold.wait()
            return n

        model = ScriptedModel(self.brain, price=WHOLE)
        worker = Worker(name="w", description="w", model=model, tools=[probe], max_iterations=6)
        return Team(name="t", planner=Planner(model=model), workers=[worker], budget=budget)


def _probe() -> _PricedProbe:
    return _PricedProbe(_LONG_BESIDE_SHORT, hold=anyio.Event(), reported=_SHORT)


async def test_a_long_step_is_topped_up_with_money_its_siblings_left() -> None:
    probe = _probe()
    need = (await probe.stream(probe.team(Budget()))).usage.micro_usd
    probe = _probe()
    result = await probe.stream(probe.team(Budget(usd=3 * need / 1_000_000)))
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert probe.bodies == 5
    assert result.usage.micro_usd <= 3 * need
    topped = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert [e.step_id for e in topped] == ["s1"]
    assert (topped[0].granted.micro_usd or 0) > 0


def _nested(budget: Budget) -> tuple[Team, _PricedProbe]:
    """The parent's step s1 goes to a nested team whose one long step waits in its tools
    until the parent's seven short steps have been committed (all priced at ``WHOLE``)."""
    child = _PricedProbe([(5, [])], hold=anyio.Event(), reported=_SHORT)
    steps = [{"description": "dig", "worker": "research"}]
    steps += [{"description": f"note {i}", "worker": "w"} for i in range(_SHORT)]
    model = ScriptedModel(Brain([plan_json(*steps)]), price=WHOLE)
    workers: list[Worker | TeamWorker] = [
        TeamWorker(name="research", description="digs", team=child.team(Budget())),
        Worker(name="w", description="notes", model=model),
    ]
    team = Team(name="parent", planner=Planner(model=model), workers=workers, budget=budget)
    return team, child


async def test_a_nested_team_draws_money_through_the_step_it_serves() -> None:
    # As tokens do: the nested run's long step outgrows the nested run's money (its
    # step's share), and draws the rest through that step from the run above.
    team, child = _nested(Budget())
    need = (await child.stream(team)).usage.micro_usd
    team, child = _nested(Budget(usd=3 * need / 1_000_000))
    result = await child.stream(team)
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert child.bodies == 5
    assert result.usage.micro_usd <= 3 * need
    topped = [e for e in result.events if isinstance(e, BudgetToppedUp)]
    assert [e.step_id for e in topped] == ["s1"]  # the parent's step, for its run
    assert (topped[0].granted.micro_usd or 0) > 0
    (report,) = [r for r in result.steps if r.step_id == "s1"]
    assert report.status == "done"


async def test_money_spent_before_a_pause_counts_after_resume(tmp_path: Path) -> None:
    probe = _probe()
    need = (await probe.stream(probe.team(Budget()))).usage.micro_usd
    probe, path = _probe(), tmp_path / "runs.db"
    team = probe.team(Budget(usd=3 * need / 1_000_000), ask_at=4)
    paused = await probe.stream(team, path)
    assert paused.status == "paused"
    assert paused.usage.micro_usd > 0
    async with team.start(journal=path) as running:
        (asked,) = await running.pending_approvals(paused.run_id)
        await running.approve(asked.request_id, Approve(), by="ana")
        done = await running.resume(paused.run_id)
    assert (done.status, done.budget_exhausted) == ("completed", None)
    # the whole run's spend, the part before the pause included, priced and charged
    assert done.usage.micro_usd == _cost(done.usage) >= need
    assert done.usage.micro_usd <= 3 * need


def _team(budget: Budget, **models: ScriptedModel) -> Team:
    priced_model = ScriptedModel([], price=WHOLE)
    worker = Worker(name="w", description="w", model=models.get("worker", priced_model))
    return Team(
        name="t",
        planner=Planner(model=models.get("planner", priced_model)),
        workers=[worker],
        critic=Critic(model=models["critic"]) if "critic" in models else None,
        budget=budget,
    )


@pytest.mark.parametrize("role", ["planner", "worker", "critic"])
def test_a_model_without_a_price_under_a_money_budget_is_refused_at_team_start(
    role: str,
) -> None:
    unpriced = ScriptedModel([], name="cheap-looking")
    with pytest.raises(ConfigError, match="'cheap-looking' has none") as raised:
        _team(Budget(usd=1.0), **{role: unpriced})
    assert "price=Price(" in str(raised.value)
    _team(Budget(), **{role: unpriced})  # no money limit: no price needed


def test_a_nested_teams_unpriced_model_is_refused_too() -> None:
    child = _team(Budget(), worker=ScriptedModel([], name="inner-model"))
    with pytest.raises(ConfigError, match=r"team worker 'inner'.*'inner-model' has none"):
        Team(
            name="outer",
            planner=Planner(model=ScriptedModel([], price=WHOLE)),
            workers=[TeamWorker(name="inner", description="d", team=child)],
            budget=Budget(usd=1.0),
        )


def test_a_ray_workers_unpriced_model_is_refused_as_any_other() -> None:
    # Ray workers are held to money as in-process ones (tests/ray/test_ray_money.py); the
    # price their replicas charge at is checked here, in the team's process.
    priced_model = ScriptedModel([], price=WHOLE)
    unpriced = ScriptedModel([], name="remote-model")
    with pytest.raises(ConfigError, match="worker 'w''s model 'remote-model' has none"):
        Team(
            name="t",
            planner=Planner(model=priced_model),
            workers=[Worker(name="w", description="d", model=unpriced, placement=Ray())],
            budget=Budget(usd=1.0),
        )
    placed = Worker(name="w", description="d", model=priced_model, placement=Ray())
    Team(name="t", planner=Planner(model=priced_model), workers=[placed], budget=Budget(usd=1.0))


@pytest.mark.parametrize("usd", [-0.01, float("nan"), float("inf"), 1e308, "5", True])
def test_a_bad_money_limit_is_refused(usd: object) -> None:
    with pytest.raises(ConfigError, match="usd"):
        Budget(usd=usd)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write"])
def test_a_bad_price_is_refused(field: str) -> None:
    for bad in (-1.0, float("nan"), 1e304):  # (1e304 once overflowed working out a cost)
        given = {"input": 1.0, "output": 1.0, field: bad}
        with pytest.raises(ConfigError, match=f"Price: {field} must be"):
            Price(**given)


def test_a_model_given_something_else_as_its_price_says_so() -> None:
    with pytest.raises(ConfigError, match="price must be a Price"):
        AnthropicModel("claude-x", api_key="k", price={"input": 3, "output": 15})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="price must be a Price"):
        ScriptedModel([], price=3.0)  # type: ignore[arg-type]


def test_a_cost_is_whole_micro_dollars_rounded_up_and_cache_prices_apply() -> None:
    usage = Usage(input_tokens=11, output_tokens=30, cache_read_tokens=100, cache_write_tokens=50)
    # 11 x 3 + 30 x 15 + 100 x 0.3 + 50 x 3.75 = 700.5 micro-dollars
    assert priced(usage, CLAUDE).micro_usd == 701
    # no cache prices given: cached input at the input price
    assert priced(usage, Price(input=3.0, output=15.0)).micro_usd == 33 + 450 + 300 + 150
    assert (usage + priced(usage, CLAUDE)).micro_usd == 701


def test_the_ledger_splits_money_evenly_and_holds_what_steps_reserved() -> None:
    ledger = BudgetLedger(Budget(usd=0.001))  # 1,000 micro-dollars
    shares = ledger.split(3)
    assert [s.micro_usd for s in shares] == [334, 333, 333]
    for key, share in enumerate(shares):
        assert ledger.reserve(key, model_calls_cap=4, share=share) is not None
    assert ledger.micro_usd_left() == 0
    assert ledger.exhausted() == "usd"
    ledger.release(0)
    ledger.spent.charge("w", Usage(micro_usd=300))
    assert ledger.micro_usd_left() == 34
    assert ledger.reserve(9, model_calls_cap=4, share=ledger.split(1)[0]) is not None
    assert ledger.reserve(10, model_calls_cap=4, share=ledger.split(1)[0]) is None


def test_a_budget_without_usd_hashes_as_before_so_old_paused_runs_resume() -> None:
    # Adding Budget.usd must not change the config hash of a team that sets no money
    # limit: a run paused before would be refused on resume as "differently configured".
    old = (
        '{"model_calls":null,"tool_calls":null,"tokens":null,"input_tokens":null,'
        '"output_tokens":null,"replans":3,"rounds":3,"wall_clock":null,"on_exhausted":"partial"}'
    )
    assert ("budget", old) in _config_parts(_team(Budget()))
    assert any('"usd":1.0' in part for _, part in _config_parts(_team(Budget(usd=1.0))))
