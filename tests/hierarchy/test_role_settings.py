"""Model settings per role: the team's default under each role's own, in code and in team files."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from regiment.config import build_team, parse_config
from regiment.errors import ConfigError
from regiment.hierarchy import Budget, Critic, Planner, Team, Worker
from regiment.models import ModelRequest, ModelSettings, ScriptedModel
from regiment.telemetry import Telemetry

from .brains import plan_json

pytestmark = pytest.mark.anyio


class Recorder:
    """A brain that answers by role and keeps each role's request settings."""

    def __init__(self) -> None:
        self.settings: dict[str, ModelSettings | None] = {}

    def __call__(self, request: ModelRequest) -> str:
        key = request.worker if request.role == "worker" else request.role
        assert key is not None
        self.settings[key] = request.settings
        match request.role:
            case "planner":
                return plan_json(
                    {"description": "price it", "worker": "pricing"},
                    {"description": "tax it", "worker": "tax", "depends_on": ["s1"]},
                )
            case "worker":
                return f"{request.worker} done"
            case "critic":
                return json.dumps({"passed": True})
            case "synthesizer":
                return "priced and taxed"
            case _:
                raise AssertionError(request.role)


async def test_each_role_gets_the_team_default_under_its_own_settings() -> None:
    brain = Recorder()
    model = ScriptedModel(brain)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    team = Team(
        name="shop",
        planner=Planner(
            model=model,
            settings=ModelSettings(temperature=0.1),
            synthesizer_settings=ModelSettings(max_tokens=300, stop_sequences=("END",)),
        ),
        workers=[
            Worker(name="pricing", description="prices", model=model),
            Worker(
                name="tax",
                description="taxes",
                model=model,
                settings=ModelSettings(top_p=0.5, extra={"top_k": 3}),
            ),
        ],
        critic=Critic(settings=ModelSettings(max_tokens=50)),
        budget=Budget(rounds=1),
        settings=ModelSettings(max_tokens=1000, temperature=0.7, extra={"seed": 1}),
        telemetry=Telemetry(provider),
    )
    result = await team.run("price with tax")
    assert result.answer == "priced and taxed"

    default = ModelSettings(max_tokens=1000, temperature=0.7, extra={"seed": 1})
    assert brain.settings == {
        "planner": ModelSettings(max_tokens=1000, temperature=0.1, extra={"seed": 1}),
        "pricing": default,
        "tax": ModelSettings(
            max_tokens=1000, temperature=0.7, top_p=0.5, extra={"seed": 1, "top_k": 3}
        ),
        "critic": ModelSettings(max_tokens=50, temperature=0.7, extra={"seed": 1}),
        "synthesizer": ModelSettings(
            max_tokens=300, temperature=0.7, stop_sequences=("END",), extra={"seed": 1}
        ),
    }
    chats = {
        str((s.attributes or {})["gen_ai.agent.name"]): dict(s.attributes or {})
        for s in exporter.get_finished_spans()
        if s.name.startswith("chat ")
    }
    assert chats["tax"]["gen_ai.request.max_tokens"] == 1000
    assert chats["tax"]["gen_ai.request.temperature"] == 0.7
    assert chats["tax"]["gen_ai.request.top_p"] == 0.5
    assert chats["planner"]["gen_ai.request.temperature"] == 0.1
    assert chats["synthesizer"]["gen_ai.request.max_tokens"] == 300
    assert chats["synthesizer"]["gen_ai.request.stop_sequences"] == ("END",)
    assert "gen_ai.request.top_p" not in chats["pricing"]


async def test_without_settings_requests_carry_none() -> None:
    brain = Recorder()
    model = ScriptedModel(brain)
    team = Team(
        name="shop",
        planner=Planner(model=model),
        workers=[
            Worker(name="pricing", description="prices", model=model),
            Worker(name="tax", description="taxes", model=model),
        ],
    )
    await team.run("price with tax")
    assert set(brain.settings.values()) == {None}


TEAM_FILE = """
name = "shop"

[settings]
max_tokens = 1000
temperature = 0.7

[planner.settings]
temperature = 0.1

[planner.synthesizer_settings]
max_tokens = 300

[critic.settings]
max_tokens = 50

[[workers]]
name = "pricing"
description = "prices"

[[workers]]
name = "tax"
description = "taxes"
settings = { top_p = 0.5, extra = { top_k = 3 } }
"""


async def test_a_team_file_sets_the_default_and_each_roles_settings() -> None:
    brain = Recorder()
    config = parse_config(TEAM_FILE, format="toml", source="shop.toml")
    team = build_team(config, model=ScriptedModel(brain), source="shop.toml")
    await team.run("price with tax")

    assert brain.settings == {
        "planner": ModelSettings(max_tokens=1000, temperature=0.1),
        "pricing": ModelSettings(max_tokens=1000, temperature=0.7),
        "tax": ModelSettings(max_tokens=1000, temperature=0.7, top_p=0.5, extra={"top_k": 3}),
        "critic": ModelSettings(max_tokens=50, temperature=0.7),
        "synthesizer": ModelSettings(max_tokens=300, temperature=0.7),
    }


@pytest.mark.parametrize(
    ("table", "replace", "message"),
    [
        (
            "[planner.settings]",
            "temperature = 0.1",
            "shop.toml: planner.settings.temprature: unknown setting 'temprature'",
        ),
        (
            "[settings]",
            "max_tokens = 1000",
            "shop.toml: settings.temprature: unknown setting 'temprature'",
        ),
        (
            "[critic.settings]",
            "max_tokens = 50",
            "shop.toml: critic.settings.temprature: unknown setting 'temprature'",
        ),
    ],
)
def test_an_unknown_setting_is_a_config_error_naming_the_key(
    table: str, replace: str, message: str
) -> None:
    text = TEAM_FILE.replace(f"{table}\n{replace}", f"{table}\ntemprature = 0.1")
    assert text != TEAM_FILE
    config = parse_config(text, format="toml", source="shop.toml")
    with pytest.raises(ConfigError, match=message):
        build_team(config, model=ScriptedModel([]), source="shop.toml")


def test_a_workers_unknown_or_out_of_range_setting_names_its_worker() -> None:
    unknown = TEAM_FILE.replace("top_p = 0.5,", "top_q = 0.5,")
    config = parse_config(unknown, format="toml", source="shop.toml")
    with pytest.raises(
        ConfigError, match=r"shop.toml: workers\[1\].settings.top_q: unknown setting 'top_q'"
    ):
        build_team(config, model=ScriptedModel([]), source="shop.toml")
    out_of_range = TEAM_FILE.replace("top_p = 0.5,", "top_p = 1.5,")
    config = parse_config(out_of_range, format="toml", source="shop.toml")
    with pytest.raises(ConfigError, match=r"shop.toml: workers\[1\].settings.top_p: must be"):
        build_team(config, model=ScriptedModel([]), source="shop.toml")
