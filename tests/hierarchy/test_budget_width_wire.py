"""The reply limit a budget holds a call to reaches each provider's wire: five steps at
once on ``Budget(output_tokens=...)``, over the HTTP stand-in, ask for no more than the
run has left between them, whatever the model's own settings say."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import AnthropicModel, ModelSettings, OpenAIModel, ScriptedModel

from ..models import chat_api, messages_api
from ..models.standin import Reply, StandIn, serve
from .brains import plan_json

pytestmark = pytest.mark.anyio

WIDTH, LIMIT = 5, 1000


def _reply(provider: str) -> Reply:
    if provider == "anthropic":
        return messages_api.message([{"type": "text", "text": "part done"}], output_tokens=30)
    return chat_api.completion("part done", output=30)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def api(provider: str) -> AsyncIterator[StandIn]:
    no_reply = _reply(provider)
    async for server in serve(no_reply):
        yield server


def _worker_model(provider: str, api: StandIn, stream: bool) -> AnthropicModel | OpenAIModel:
    roomy = ModelSettings(max_tokens=8000)  # the model's own layer asks for more than fits
    if provider == "anthropic":
        return AnthropicModel(
            "claude-test-1", api_key="k", base_url=api.base_url, stream=stream, settings=roomy
        )
    return OpenAIModel(
        "gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1", stream=stream, settings=roomy
    )


def _planner(request: object) -> str:
    return plan_json(*({"id": f"s{i}", "description": f"part {i}"} for i in range(WIDTH)))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_steps_at_width_ask_the_provider_for_no_more_than_the_budget_has_left(
    provider: str, api: StandIn, stream: bool
) -> None:
    planned = ScriptedModel(_planner)  # the synthesis, too, is the planner's model here
    model = _worker_model(provider, api, stream)
    team = Team(
        name="wide",
        planner=Planner(model=planned, max_steps=WIDTH),
        workers=[Worker(name="w", description="does parts", model=model)],
        budget=Budget(output_tokens=LIMIT),
        concurrency=WIDTH,
    )
    async with model, team.start() as running:
        result = await running.run("do five parts")
    assert result.status == "completed"
    key = "max_tokens" if provider == "anthropic" else "max_completion_tokens"
    asked = [r.body[key] for r in api.requests]
    assert len(asked) == WIDTH
    # Each step asked for its share of what the plan left (under the 8,000 the model's
    # settings ask for); together, no more than the budget.
    assert sum(asked) <= LIMIT
    assert max(asked) <= LIMIT // WIDTH
    assert max(asked) - min(asked) <= 1


def _thinking_team(api: StandIn, budget: Budget) -> tuple[Team, AnthropicModel]:
    thinks = ModelSettings(max_tokens=8000, thinking_budget=4000)
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url, settings=thinks)
    team = Team(
        name="wide",
        planner=Planner(model=ScriptedModel(_planner), max_steps=WIDTH),
        workers=[Worker(name="w", description="does parts", model=model)],
        budget=budget,
        concurrency=WIDTH,
    )
    return team, model


@pytest.mark.parametrize("provider", ["anthropic"])
async def test_a_held_reply_lowers_claudes_thinking_budget_below_it(api: StandIn) -> None:
    team, model = _thinking_team(api, Budget(output_tokens=16_000))
    async with model, team.start() as running:
        result = await running.run("do five parts")
    assert result.status == "completed"
    assert len(api.requests) == WIDTH
    for request in api.requests:
        most = request.body["max_tokens"]
        assert most <= 16_000 // WIDTH
        assert request.body["thinking"] == {"type": "enabled", "budget_tokens": most - 1}


@pytest.mark.parametrize("provider", ["anthropic"])
async def test_a_share_too_small_to_think_in_ends_the_step_without_calling(
    api: StandIn,
) -> None:
    # A share of 200 cannot hold a reply that thinks (Claude needs max_tokens above a
    # thinking budget of at least 1024): the call is not made, rather than made with its
    # thinking budget above its max_tokens, which the model refuses (ConfigError).
    team, model = _thinking_team(api, Budget(output_tokens=LIMIT))
    async with model, team.start() as running:
        result = await running.run("do five parts")
    assert api.requests == []  # no call the API would refuse
    assert (result.status, result.budget_exhausted) == ("partial", "output_tokens")
    errors = [r.error or "" for r in result.steps]
    assert errors
    assert all("too few for a call that thinks" in e for e in errors)
