"""``[providers.anthropic]`` and ``[providers.openai]``: the options of the models a
team file names (a file could set none of them: Claude's ``max_continuations``,
``max_retries``, ``timeout``, ``stream``), tried against the HTTP stand-ins."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from regiment.config import build_team, parse_config
from regiment.errors import ConfigError, ModelAPIError, ModelConnectionError
from regiment.hierarchy import Team
from regiment.models import AnthropicModel, Message, ModelRequest, OpenAIModel

from ..models import chat_api, messages_api
from ..models.standin import StandIn, serve

pytestmark = pytest.mark.anyio

TEAM = """
name = "t"
model = "{model}"

[providers.{provider}]
{options}

[[workers]]
name = "w"
description = "works"
"""

PAUSED: list[messages_api.Block] = [{"type": "text", "text": "Searching."}]


def team_from(model: str, provider: str, options: str) -> Team:
    text = TEAM.format(model=model, provider=provider, options=options)
    return build_team(parse_config(text, format="toml", source="t.toml"), source="t.toml")


def made_model(team: Team) -> AnthropicModel | OpenAIModel:
    model = team.planner.model
    assert isinstance(model, AnthropicModel | OpenAIModel)
    return model


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message.user("Weather in Oslo?"),))


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in serve(messages_api.error(500, "api_error", "none")):
        yield server


async def test_max_continuations_and_retries_reach_claude(
    api: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    team = team_from("anthropic:claude-test-1", "anthropic", "max_continuations = 1")
    paused = messages_api.message(PAUSED, stop_reason="pause_turn")
    api.queue(paused, paused, messages_api.message([{"type": "text", "text": "never"}]))
    async with made_model(team) as model:
        with pytest.raises(ModelAPIError, match=r"max_continuations=1"):
            await model.complete(ask())
    assert len(api.requests) == 2  # the first leg and one continuation (5 by default)


@pytest.mark.parametrize(
    ("model", "provider", "error"),
    [
        ("anthropic:claude-test-1", "anthropic", messages_api.error),
        ("openai-compatible:llama-test", "openai", chat_api.error),
    ],
)
async def test_max_retries_timeout_and_stream_reach_each_provider(
    api: StandIn, monkeypatch: pytest.MonkeyPatch, model: str, provider: str, error: object
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.base_url}/v1")
    options = "max_retries = 0\ntimeout = 0.25\nstream = false"
    assert callable(error)
    api.queue(error(503, "overloaded", "busy", **{"retry-after-ms": "1"}))
    held = messages_api.message([], stop_reason="end_turn")
    held.hold = True  # never answers: the timeout ends it
    api.queue(held)
    async with made_model(team_from(model, provider, options)) as made:
        with pytest.raises(ModelAPIError, match=r"not retried: max_retries=0"):
            await made.complete(ask())
        with pytest.raises(ModelConnectionError, match=r"did not answer in 0\.25 s"):
            await made.complete(ask())
    assert [r.body.get("stream") for r in api.requests] == [None, None]  # plain calls


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ("max_continuation = 2", "unknown key"),
        ("max_retries = -1", "max_retries"),
        ("timeout = 0", "timeout"),
    ],
)
def test_a_bad_option_names_its_key(
    options: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with pytest.raises(ConfigError) as caught:
        team_from("anthropic:claude-test-1", "anthropic", options)
    assert str(caught.value).startswith("t.toml: providers.anthropic")
    assert said in str(caught.value)


def test_max_continuations_is_claudes_only() -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        team_from("openai-compatible:llama-test", "openai", "max_continuations = 1")
