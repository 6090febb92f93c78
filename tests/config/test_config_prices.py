"""Prices in a team file: ``[prices]`` by model spec, or ``price`` on a provider's table;
a ``[budget]`` ``usd`` needs one for every model the file names."""

from __future__ import annotations

import pytest

from regiment.config import TeamConfig, build_team, check_config, parse_config
from regiment.errors import ConfigError
from regiment.hierarchy import Team
from regiment.models import Price

TEAM = """
name = "t"
model = "{model}"
brain = "examples.refund.brain:refund_brain"
{extra}

[[workers]]
name = "w"
description = "works"
"""


def _config(model: str, extra: str) -> TeamConfig:
    return parse_config(TEAM.format(model=model, extra=extra), format="toml", source="t.toml")


def _team(model: str, extra: str) -> Team:
    return build_team(_config(model, extra), source="t.toml")


def test_a_price_by_model_spec_reaches_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    extra = """
[budget]
usd = 2.5

[prices."anthropic:claude-x"]
input = 3.0
output = 15.0
cache_read = 0.3
"""
    team = _team("anthropic:claude-x", extra)
    assert getattr(team.planner.model, "price", None) == Price(
        input=3.0, output=15.0, cache_read=0.3
    )
    assert team.budget.usd == 2.5


def test_a_providers_price_prices_its_models_under_the_files_prices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    extra = """
[providers.openai]
price = {input = 2.0, output = 8.0}

[prices."openai:gpt-b"]
input = 1.0
output = 4.0

[planner]
model = "openai:gpt-b"
"""
    team = _team("openai:gpt-a", extra)
    worker_model = getattr(team.workers[0], "model", None)
    assert getattr(worker_model, "price", None) == Price(input=2.0, output=8.0)
    assert getattr(team.planner.model, "price", None) == Price(input=1.0, output=4.0)


def test_a_scripted_model_is_priced_by_its_spec() -> None:
    team = _team("scripted", "[budget]\nusd = 1.0\n\n[prices.scripted]\ninput = 1\noutput = 2\n")
    assert getattr(team.planner.model, "price", None) == Price(input=1, output=2)


@pytest.mark.parametrize("check", [True, False], ids=["check_config", "build_team"])
def test_a_money_budget_with_an_unpriced_model_names_it(check: bool) -> None:
    config = _config("scripted", "[budget]\nusd = 1.0\n")
    made = check_config if check else build_team
    with pytest.raises(ConfigError, match="has none") as raised:
        made(config, source="t.toml")
    assert "scripted" in str(raised.value)


def test_a_bad_price_in_a_file_names_it() -> None:
    with pytest.raises(ConfigError, match="output"):
        _config("scripted", "[prices.scripted]\ninput = 1\noutput = -2\n")
    with pytest.raises(ConfigError, match="prices"):
        check_config(
            _config("scripted", "[prices.nonsense]\ninput = 1\noutput = 2\n"), source="t.toml"
        )


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ('[prices."anthropic:claude-sonnet-4-5"]\ninput = -3.0\noutput = 15\n', 'prices."anthropic:claude-sonnet-4-5".input'),
        ("[providers.anthropic.price]\ninput = 3\noutput = 15\ncache_read = inf\n", "providers.anthropic.price.cache_read"),
    ],
)  # fmt: skip
def test_a_price_out_of_range_names_its_file_and_key(extra: str, where: str) -> None:
    # It said only "Price: input must be a number of US dollars ...": no file, no key,
    # where every other value out of range names both (budget.usd, settings.top_p).
    with pytest.raises(ConfigError) as caught:
        _config("anthropic:claude-sonnet-4-5", extra)
    assert str(caught.value).startswith(f"t.toml: {where}: must be a number of US dollars")
