"""Team files: the refund team from TOML and YAML, and every kind of mistake named precisely."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL
from regiment.config import (
    TeamConfig,
    WorkerConfig,
    build_team,
    check_config,
    load_config,
    load_team,
    parse_config,
)
from regiment.errors import ConfigError
from regiment.hierarchy import Worker
from regiment.models import ScriptedModel

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund" / "team.toml"

GOOD = """
name = "refunds"
model = "scripted"
brain = "examples.refund.brain:refund_brain"

[planner]
max_steps = 6

[[workers]]
name = "billing"
description = "Checks refund eligibility, issues refunds, flags exceptions."
tools = ["examples.refund.tools:check_eligibility", "examples.refund.tools:issue_refund",
         "examples.refund.tools:flag_exception"]

[[workers]]
name = "comms"
description = "Writes and sends e-mails to customers."
tools = ["examples.refund.tools:email_customer"]

[checks.eligible]
description = "the order is eligible for a refund"
predicate = "examples.refund.checks:eligible"
explain = "examples.refund.checks:why_not"

[budget]
model_calls = 40
"""


def _write(tmp_path: Path, text: str, name: str = "team.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.anyio
async def test_the_refund_file_runs_the_refund_story() -> None:
    team = load_team(REFUND, model="scripted")
    result = await team.run(GOAL)
    assert [p.version for p in result.plans] == [1, 2]
    assert result.committed == ("s4", "s5")
    assert result.rejected == ("s1",)
    assert "not eligible" in result.plans[1].reason


def test_toml_and_yaml_describe_the_same_team(tmp_path: Path) -> None:
    yaml_text = """
    name: refunds
    model: scripted
    brain: examples.refund.brain:refund_brain
    planner: {max_steps: 6}
    workers:
      - name: billing
        description: Checks refund eligibility, issues refunds, flags exceptions.
        tools: [examples.refund.tools:check_eligibility, examples.refund.tools:issue_refund,
                examples.refund.tools:flag_exception]
      - name: comms
        description: Writes and sends e-mails to customers.
        tools: [examples.refund.tools:email_customer]
    checks:
      eligible:
        description: the order is eligible for a refund
        predicate: examples.refund.checks:eligible
        explain: examples.refund.checks:why_not
    budget: {model_calls: 40}
    """
    from_toml = load_config(_write(tmp_path, GOOD))
    from_yaml = load_config(_write(tmp_path, yaml_text, "team.yaml"))
    assert from_toml == from_yaml


def test_config_and_code_are_two_doors_to_one_model() -> None:
    config = parse_config(GOOD, format="toml")
    model = ScriptedModel(refund_brain)
    team = build_team(config, model=model)
    assert team.name == "refunds"
    assert team.planner.max_steps == 6
    assert team.planner.model is model
    assert [w.name for w in team.workers] == ["billing", "comms"]
    billing = team.workers[0]
    assert billing.capabilities == ("check_eligibility", "issue_refund", "flag_exception")
    assert team.checks["eligible"].description == "the order is eligible for a refund"
    assert team.budget.model_calls == 40
    assert team.budget.replans == 3  # the Budget default, not a config invention
    # The same structure written in Python builds the same team.
    same = build_team(
        TeamConfig(
            name="refunds",
            model="scripted",
            brain="examples.refund.brain:refund_brain",
            planner=config.planner,
            workers=config.workers,
            checks=config.checks,
            budget=config.budget,
        ),
        model=model,
    )
    assert [w.capabilities for w in same.workers] == [w.capabilities for w in team.workers]


def test_roles_share_one_model_per_spec() -> None:
    team = build_team(parse_config(GOOD, format="toml"))
    models = {id(team.planner.model), *(id(w.model) for w in team.workers if isinstance(w, Worker))}
    assert len(models) == 1


def test_a_plain_function_becomes_a_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(
        tmp_path,
        'def shout(text: str) -> str:\n    """Loudly."""\n    return text.upper()\n',
        "plain_tools_for_config.py",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    worker = WorkerConfig(name="w", description="d", tools=("plain_tools_for_config:shout",))
    brain = "examples.refund.brain:refund_brain"
    team = build_team(TeamConfig(name="t", workers=(worker,), brain=brain))
    assert team.workers[0].capabilities == ("shout",)


def test_check_config_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    team = check_config(load_config(REFUND), source="team.toml")
    assert [w.name for w in team.workers] == ["billing", "comms"]
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        load_team(REFUND)


BAD = [
    (
        GOOD.replace("examples.refund.tools:email_customer", "examples.refund.tools:send_mail"),
        "team.toml: workers[1].tools[0]: cannot import 'examples.refund.tools:send_mail': "
        "no attribute 'send_mail' (it has: Ledger, check_eligibility, email_customer, flag_exception, "
        "issue_refund, make_tools)",
    ),
    (
        GOOD.replace("examples.refund.tools:issue_refund", "examples.refund.toolz:issue_refund"),
        "team.toml: workers[0].tools[1]: cannot import 'examples.refund.toolz:issue_refund': "
        "no module named 'examples.refund.toolz'",
    ),
    (
        GOOD.replace("examples.refund.tools:issue_refund", "examples.refund.tools:ORDERS"),
        "team.toml: workers[0].tools[1]: 'examples.refund.tools:ORDERS' is a dict; "
        "expected a Tool (made with @tool) or a function",
    ),
    (
        GOOD.replace("examples.refund.tools:issue_refund", "issue_refund"),
        "team.toml: workers[0].tools[1]: expected 'module:attribute'",
    ),
    (
        GOOD.replace("max_steps = 6", "max_step = 6"),
        "team.toml: planner: unknown key `max_step =` (did you mean `max_steps =`?)",
    ),
    (
        GOOD.replace("model_calls = 40", 'model_calls = "forty"'),
        "team.toml: budget.model_calls: expected `int | null`, got `str`",
    ),
    (
        GOOD.replace('name = "comms"\n', ""),
        "team.toml: workers[1].name: this required key is missing (add `name =`)",
    ),
    (
        GOOD.replace('model = "scripted"', 'model = "gpt-4"'),
        "team.toml: model: expected 'anthropic:<model id>'",  # the key written, not a role
    ),
    (
        GOOD.replace('brain = "examples.refund.brain:refund_brain"', ""),
        "team.toml: model: the model is 'scripted' but the file has no brain",
    ),
    (
        GOOD.replace('name = "comms"', 'name = "billing"'),
        "team.toml: workers[1].name: 'billing' is also workers[0]'s name; worker names must "
        "be unique (a plan assigns steps by name)",
    ),
    (
        GOOD.replace('name = "comms"', 'name = "comms team"'),
        "team.toml: workers[1].name: must be non-empty letters, digits, '_' or '-'; got 'comms team'",
    ),
    (
        GOOD.replace("examples.refund.checks:eligible", "examples.refund.tools:Ledger"),
        "team.toml: checks.eligible.predicate: 'examples.refund.tools:Ledger' is the class "
        "Ledger; expected a function of a StepReport",
    ),
    (GOOD.replace("[budget]", "[budget"), "team.toml: not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_mistakes_name_the_file_the_key_and_what_was_expected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)  # errors start with the path as given
    _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        check_config(load_config("team.toml"), source="team.toml")
    assert str(caught.value).startswith(message), str(caught.value)


def test_bad_yaml_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"team.yaml: line 1, column 16: not valid YAML: expected"
    ):
        load_config(_write(tmp_path, "name: [unclosed", "team.yaml"))
    with pytest.raises(ConfigError, match=r"expected a .toml, .yaml or .yml team file"):
        load_config(_write(tmp_path, "{}", "team.json"))
    with pytest.raises(ConfigError, match=r"expected `object`, got `array`"):
        load_config(_write(tmp_path, "- 1\n- 2\n", "list.yml"))


def test_a_workers_tool_result_limit_comes_from_the_file() -> None:
    text = GOOD.replace('name = "comms"\n', 'name = "comms"\nmax_tool_result_chars = 2000\n')
    team = build_team(parse_config(text, format="toml"))
    limits = [w.toolset.max_result_chars for w in team.workers if isinstance(w, Worker)]
    assert limits == [100_000, 2000]  # the default, and the file's


@pytest.mark.anyio
async def test_the_refund_team_in_yaml_is_the_toml_one() -> None:
    # The README promised TOML or YAML, but showed and shipped TOML only.
    yaml_file = REFUND.with_suffix(".yaml")
    assert load_config(yaml_file) == load_config(REFUND)
    result = await load_team(yaml_file, model="scripted").run(GOAL)
    assert result.status == "completed"
    assert [plan.version for plan in result.plans] == [1, 2]  # the replan, as in the demo
