"""A money limit over the provider's wire: five steps at once on ``Budget(usd=...)``, over
the Messages API stand-in, each ask for no more reply than their share can pay at the
model's output price, and each response is priced from the usage the API reported
(cache reads and writes at their own prices), on its ``chat`` span too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import Budget, BudgetExhausted, Planner, Team, Worker
from regiment.models import AnthropicModel, ModelSettings, Price, ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry

from ..models import messages_api
from ..models.standin import StandIn, serve
from .brains import plan_json

pytestmark = pytest.mark.anyio

WIDTH = 5
CLAUDE = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
FREE = Price(input=0.0, output=0.0)  # the scripted planner's calls cost nothing
# Each reply: 11 input, 30 output, 100 read from and 50 written to the cache:
# 11 x 3 + 30 x 15 + 100 x 0.3 + 50 x 3.75 = 700.5 micro-dollars, charged as 701.
PER_CALL = 701


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    reply = messages_api.message(
        [{"type": "text", "text": "part done"}],
        output_tokens=30,
        cache_read_input_tokens=100,
        cache_creation_input_tokens=50,
    )
    async for server in serve(reply):
        yield server


def _planner(request: object) -> str:
    return plan_json(*({"id": f"s{i}", "description": f"part {i}"} for i in range(WIDTH)))


def _team(
    api: StandIn, budget: Budget, stream: bool, telemetry: Telemetry | None = None
) -> tuple[Team, AnthropicModel]:
    roomy = ModelSettings(max_tokens=8000)
    model = AnthropicModel(
        "claude-test-1",
        api_key="k",
        base_url=api.base_url,
        stream=stream,
        settings=roomy,
        price=CLAUDE,
    )
    team = Team(
        name="wide",
        planner=Planner(model=ScriptedModel(_planner, price=FREE), max_steps=WIDTH),
        workers=[Worker(name="w", description="does parts", model=model)],
        budget=budget,
        concurrency=WIDTH,
        telemetry=telemetry,
    )
    return team, model


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_steps_at_width_ask_for_no_more_than_their_money_pays_for(
    api: StandIn, stream: bool
) -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team, model = _team(api, Budget(usd=0.05), stream, Telemetry(provider))
    async with model, team.start() as running:
        result = await running.run("do five parts")
    assert result.status == "completed"
    asked = [r.body["max_tokens"] for r in api.requests]
    assert len(asked) == WIDTH
    # a share of 10,000 micro-dollars pays for at most 666 output tokens at $15/M
    assert max(asked) <= 50_000 // WIDTH * 1_000_000 // 15_000_000
    assert result.usage.micro_usd == WIDTH * PER_CALL
    assert result.usage_by_role["w"].micro_usd == WIDTH * PER_CALL
    chats = [s for s in collector.spans() if s.name == "chat claude-test-1"]
    assert len(chats) == WIDTH
    assert {dict(s.attributes or {})["regiment.usage.cost_usd"] for s in chats} == {0.000701}
    runs = [dict(s.attributes or {}) for s in collector.spans()]
    (run,) = [a for a in runs if "regiment.run.status" in a]
    assert run["regiment.usage.cost_usd"] == WIDTH * PER_CALL / 1e6


async def test_a_share_that_cannot_pay_for_the_input_makes_no_call(api: StandIn) -> None:
    # 100 micro-dollars between five steps: 20 each, less than a call's input costs; all
    # of it, less too. No step is sent (each was, and ended at once, out of its share).
    team, model = _team(api, Budget(usd=0.0001), stream=True)
    async with model, team.start() as running:
        result = await running.run("do five parts")
    assert api.requests == []
    assert (result.status, result.budget_exhausted) == ("partial", "usd")
    assert result.steps == ()
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert ended.detail.startswith("no budget left to dispatch step s0: its first call costs")
    assert ended.detail.endswith(", and $0.000100 is left")  # and says what it needed
