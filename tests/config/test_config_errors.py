"""Team file errors: unreadable bytes, deep nesting, value ranges, key paths and suggestions."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import regiment.config
import regiment.hierarchy
from regiment.cli._lines import with_line
from regiment.config import check_config, load_config, load_team
from regiment.errors import ConfigError
from regiment.hierarchy import Budget, Check, Compression, Planner, Team, Worker
from regiment.models import ScriptedModel

MODEL = ScriptedModel([])
WORKER = Worker(name="billing", description="d", model=MODEL)

TEAM = """
name = "t"
model = "scripted"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "billing"
description = "Checks refunds."
"""


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        check_config(load_config(path), source=str(path))
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    return message


def test_bytes_that_are_not_utf8_name_the_file_and_the_line(tmp_path: Path) -> None:
    team = _write(tmp_path / "team.toml", b'name = "t"\n\x00\xff\xfe garbage')
    with pytest.raises(ConfigError) as caught:
        load_team(team)
    assert str(caught.value).startswith(f"{team}: line 2: not UTF-8 text (byte 0xff at offset 12)")


@pytest.mark.parametrize("depth", [40, 150, 5000])
@pytest.mark.parametrize(("suffix", "line"), [("toml", "x = {}"), ("yaml", "x: {}")])
def test_arrays_nested_thousands_deep_are_refused(
    tmp_path: Path, depth: int, suffix: str, line: str
) -> None:
    text = "name = 't'\n" if suffix == "toml" else "name: t\n"
    nested = "[" * depth + "]" * depth
    team = _write(tmp_path / f"team.{suffix}", text + line.format(nested))
    message = _error(team)
    assert message.startswith(f"{team}: ")
    assert "nested more than 32 deep" in message
    assert "x" in message.split(":")[1]  # the key it happens under: x[0][0]... or line 2 (under x)


def test_block_yaml_nested_thousands_deep_is_refused(tmp_path: Path) -> None:
    # 1,000 levels: the indentation of 3,000 made a 9 MB file, now refused for its size
    lines = "".join("  " * level + "-\n" for level in range(1000))
    message = _error(_write(tmp_path / "team.yaml", "name: t\nx:\n" + lines))
    assert "nested more than 32 deep" in message


def test_a_yaml_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "team.yaml", "name: t\nx: &a [*a]\n"))
    assert "nested more than 32 deep" in message


def test_a_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["name: t", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 12)]
    message = _error(_write(tmp_path / "team.yaml", "\n".join(lines)))
    assert "more than 100000 values (YAML aliases expand)" in message


def test_yaml_syntax_errors_name_the_file_line_and_column(tmp_path: Path) -> None:
    team = _write(tmp_path / "team.yaml", "name: t\nworkers:\n  - name: a\n   bad: [\n")
    message = _error(team)
    assert message.startswith(f"{team}: line ")
    assert "column" in message
    assert "<unicode string>" not in message


@pytest.mark.parametrize(
    ("text", "where", "key"),
    [
        ("name: t\nname: u\nworkers: [{name: a, description: d}]\n", "line 2, column 1", "name"),
        ("name: t\nworkers:\n  - name: a\n    description: d\n    step_timeout: 5\n    step_timeout: 50\n", "line 6, column 5", "step_timeout"),
    ],
)  # fmt: skip
def test_a_yaml_key_given_twice_is_refused_not_silently_the_last(
    tmp_path: Path, text: str, where: str, key: str
) -> None:
    # PyYAML keeps the last; TOML refuses it ("Cannot overwrite a value"): now both refuse.
    team = _write(tmp_path / "team.yaml", text)
    assert _error(team) == (
        f"{team}: {where}: not valid YAML: the key '{key}' is given twice; keep one "
        "(while reading a mapping)"
    )


def test_a_yaml_merge_may_still_override_a_key() -> None:
    text = "base: &b {step_timeout: 5}\nworker: {<<: *b, step_timeout: 50}\n"
    assert regiment.config._text.parse_text(text, "yaml", "t.yaml") == {
        "base": {"step_timeout": 5},
        "worker": {"step_timeout": 50},
    }


def test_a_control_character_in_yaml_names_the_line_and_column(tmp_path: Path) -> None:
    team = _write(tmp_path / "team.yaml", "name: t\nx: a\x00b\n")
    assert _error(team) == (
        f"{team}: line 2, column 5: not valid YAML: the character U+0000 is not allowed in "
        "YAML text; remove it, or write it as an escape in a quoted string"
    )


def test_a_missing_predicate_names_the_check(tmp_path: Path) -> None:
    team = _write(tmp_path / "team.toml", TEAM + '[checks.c]\ndescription = "x"\n')
    assert _error(team) == (
        f"{team}: checks.c.predicate: this required key is missing (add `predicate =`)"
    )
    text = TEAM + '[checks.ok]\ndescription = "x"\npredicate = "a:b"\n[checks."odd name"]\n'
    team = _write(tmp_path / "team.toml", text + "predicate = 3\n")
    assert _error(team).startswith(f'{team}: checks."odd name".predicate: expected `str`')


def test_a_nested_team_path_that_is_no_team_file_names_the_referring_key(tmp_path: Path) -> None:
    _write(tmp_path / "x.txt", "anything")
    text = TEAM + '[[workers]]\nname = "r"\ndescription = "d"\nteam = "x.txt"\n'
    team = _write(tmp_path / "team.toml", text)
    assert _error(team) == (
        f"{team}: workers[1].team: 'x.txt' is not a team file: "
        "expected a path ending in .toml, .yaml or .yml"
    )
    _write(tmp_path / "sub.toml", b"name = \xff")
    team = _write(tmp_path / "team.toml", text.replace("x.txt", "sub.toml"))
    message = _error(team)
    assert message.startswith(f"{tmp_path / 'sub.toml'}: line 1: not UTF-8 text")
    assert message.endswith(f"(the team file named by {team}: workers[1].team = 'sub.toml')")


@pytest.mark.parametrize(
    ("suffix", "text", "expected"),
    [
        ("toml", TEAM.replace("[[workers]]", "[[worker]]"), "unknown table `[[worker]]` (did you mean `[[workers]]`?)"),
        ("toml", TEAM + "[planer]\nmax_steps = 3\n", "unknown table `[planer]` (did you mean `[planner]`?)"),
        ("toml", TEAM + "[planner.prompt]\nplanner = 'x'\n", "planner: unknown table `[planner.prompt]` (did you mean `[planner.prompts]`?)"),
        ("toml", TEAM + "tool = ['a:b']\n", "workers[0]: unknown key `tool =` (did you mean `tools =`?)"),
        ("toml", TEAM + "[budgets]\ntokens = 3\n", "unknown table `[budgets]` (did you mean `[budget]`?)"),
        ("toml", TEAM + "[budget]\ntokenz = 3\n", "budget: unknown key `tokenz =` (did you mean `tokens =`?)"),
        ("yaml", "name: t\nworkers: [{name: a, description: d}]\nbudget: {replan: 1}\n", "budget: unknown key `replan:` (did you mean `replans:`?)"),
        ("toml", "check = 1\n" + TEAM, "unknown key `check =` (did you mean `[checks.<name>]`?)"),
        ("yaml", "name: t\nworker: [{name: a, description: d}]\n", "unknown key `worker:` (did you mean `workers:`?)"),
    ],
)  # fmt: skip
def test_a_misspelt_key_is_suggested_in_the_syntax_the_file_needs(
    tmp_path: Path, suffix: str, text: str, expected: str
) -> None:
    team = _write(tmp_path / f"team.{suffix}", text)
    assert _error(team) == f"{team}: {expected}"


@pytest.mark.parametrize(
    ("suffix", "text", "expected"),
    [
        ("toml", TEAM.replace('name = "t"', 'name = "t"\nconcurrency = "4"'), "concurrency: expected `int`, got `str`; write a whole number, without quotes (`concurrency = 4`)"),
        ("toml", TEAM + 'cancel_grace = "5s"\n', "workers[0].cancel_grace: expected `float | null`, got `str`; write a number, without quotes (`cancel_grace = 5.0`), or leave the key out"),
        ("toml", TEAM + "step_timeout = true\n", "workers[0].step_timeout: expected `float | null`, got `bool`; write a number, without quotes (`step_timeout = 5.0`), or leave the key out"),
        ("toml", TEAM + "[budget]\nmodel_calls = 2.5\n", "budget.model_calls: expected `int | null`, got `float`; write a whole number, without quotes (`model_calls = 8`), or leave the key out"),
        ("toml", TEAM + 'artifact = "true"\n', "workers[0].artifact: expected `bool`, got `str`; write true or false, without quotes (`artifact = true`)"),
        ("toml", TEAM + "tools = ['a:b', 5]\n", "workers[0].tools[1]: expected `str`, got `int`; write text in quotes"),
        ("toml", TEAM + "tools = 'a:b'\n", "workers[0].tools: expected `array`, got `str`; write a list (`tools = [...]`)"),
        ("toml", TEAM.replace("[[workers]]", "[workers]"), "workers: expected `array`, got `object`; write a list: one `[[workers]]` table per entry"),
        ("toml", 'planner = "p"\n' + TEAM, "planner: expected `object`, got `str`; write a `[planner]` table"),
        ("yaml", "name: t\nworkers: {name: a, description: d}\n", "workers: expected `array`, got `object`; write a list: one `- ` item per entry"),
        ("yaml", "name: t\nworkers: [{name: a, description: d, step_timeout: 5 s}]\n", "workers[0].step_timeout: expected `float | null`, got `str`; write a number, without quotes (`step_timeout: 5.0`), or leave the key out"),
        ("yaml", "name: t\nplanner: p\nworkers: [{name: a, description: d}]\n", "planner: expected `object`, got `str`; write a mapping under `planner:`"),
        # YAML 1.1 reads 1e3 (no dot) as text: it said "without quotes" of a value written
        # without any, and showed `8`, not the number meant.
        ("yaml", "name: t\nconcurrency: 1e3\nworkers: [{name: a, description: d}]\n", "concurrency: expected `int`, got `str`; write a whole number, without quotes (`concurrency: 1000`; YAML reads 1e3 as text)"),
        ("yaml", "name: t\nworkers: [{name: a, description: d, step_timeout: 1e2}]\n", "workers[0].step_timeout: expected `float | null`, got `str`; write a number, without quotes (`step_timeout: 100.0`; YAML reads 1e2 as text), or leave the key out"),
        ("yaml", "- name: t\n", "expected `object`, got `array`; write the file as a mapping of keys (`name:`, `workers:`, ...)"),
        # An item of a list of tables: it said to write a `[workers]` table (which the file
        # cannot have), or in YAML a mapping under `"":`.
        ("toml", 'name = "t"\nworkers = ["billing"]\n', "workers[0]: expected `object`, got `str`; write a `[[workers]]` table"),
        ("toml", TEAM + "mcp = [5]\n", "workers[0].mcp[0]: expected `object`, got `int`; write a `[[workers.mcp]]` table"),
        ("yaml", "name: t\nworkers:\n  - billing\n", "workers[0]: expected `object`, got `str`; write the item as a mapping (`- name: ...`)"),
        ("yaml", "name: t\nworkers:\n  - name: a\n    description: d\n  -\n", "workers[1]: expected `object`, got `null`; write the item as a mapping (`- name: ...`)"),
        ("yaml", "name: t\nworkers:\n  - name: a\n    description: d\n    mcp: [python]\n", "workers[0].mcp[0]: expected `object`, got `str`; write the item as a mapping (`- command: ...`)"),
        # A table of named tables: it said to write a `[checks]` table, which holds no check.
        ("toml", TEAM + '[[checks]]\ndescription = "d"\n', "checks: expected `object`, got `array`; write one `[checks.<name>]` table per entry"),
        ("toml", TEAM + "[[prices]]\ninput = 3.0\n", 'prices: expected `object`, got `array`; write one `[prices."<model spec>"]` table per entry'),
        ("yaml", "name: t\nworkers: [{name: a, description: d}]\nchecks: [{description: d}]\n", "checks: expected `object`, got `array`; write a mapping under `checks:`, one `<name>:` mapping per entry"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_says_what_to_write_instead(
    tmp_path: Path, suffix: str, text: str, expected: str
) -> None:
    team = _write(tmp_path / f"team.{suffix}", text)
    assert _error(team) == f"{team}: {expected}"


def test_an_unknown_key_with_no_close_match_lists_the_keys_of_its_table(tmp_path: Path) -> None:
    team = _write(tmp_path / "team.toml", TEAM.replace("[[workers]]", "zzzzzz = 1\n[[workers]]"))
    message = _error(team)
    assert message.startswith(f"{team}: unknown key `zzzzzz =` (expected one of: `name =`")
    for known in ("`[[workers]]`", "`[planner]`", "`concurrency =`", "`[checks.<name>]`"):
        assert known in message


# Each numeric field of the public types: how to make the type with a value, and
# the range the README documents, written out again here to test against.
RANGES: dict[str, tuple[Callable[[float], object], Callable[[float], bool]]] = {
    "Worker.max_iterations": (lambda v: Worker(name="w", description="d", model=MODEL, max_iterations=v), lambda v: v >= 1),  # type: ignore[arg-type]
    "Worker.max_concurrent_steps": (lambda v: Worker(name="w", description="d", model=MODEL, max_concurrent_steps=v), lambda v: v >= 1),  # type: ignore[arg-type]
    "Worker.step_timeout": (lambda v: Worker(name="w", description="d", model=MODEL, step_timeout=v), lambda v: math.isfinite(v) and v > 0),
    "Planner.max_steps": (lambda v: Planner(model=MODEL, max_steps=v), lambda v: v >= 1),  # type: ignore[arg-type]
    "Planner.max_plan_attempts": (lambda v: Planner(model=MODEL, max_plan_attempts=v), lambda v: v >= 1),  # type: ignore[arg-type]
    "Compression.threshold_tokens": (lambda v: Compression(threshold_tokens=v), lambda v: v >= 1),  # type: ignore[arg-type]
    "Compression.context_window": (lambda v: Compression(context_window=v), lambda v: v >= 2),  # type: ignore[arg-type]  # x 0.5 must be a token
    "Compression.window_fraction": (lambda v: Compression(window_fraction=v), lambda v: math.isfinite(v) and 0 < v <= 1 and int(200_000 * v) >= 1),  # the threshold is a token or more
    "Budget.tokens": (lambda v: Budget(tokens=v), lambda v: v >= 0),  # type: ignore[arg-type]
    "Budget.tool_calls": (lambda v: Budget(tool_calls=v), lambda v: v >= 0),  # type: ignore[arg-type]
    "Budget.model_calls": (lambda v: Budget(model_calls=v), lambda v: v >= 0),  # type: ignore[arg-type]
    "Budget.replans": (lambda v: Budget(replans=v), lambda v: v >= 0),  # type: ignore[arg-type]
    "Budget.rounds": (lambda v: Budget(rounds=v), lambda v: v >= 1),  # type: ignore[arg-type]
    "Budget.wall_clock": (lambda v: Budget(wall_clock=v), lambda v: math.isfinite(v) and v > 0),
}  # fmt: skip
INT_FIELDS = {
    k for k in RANGES if k.split(".")[1] not in ("step_timeout", "window_fraction", "wall_clock")
}


@given(
    field=st.sampled_from(sorted(RANGES)),
    number=st.integers(min_value=-(10**12), max_value=10**12) | st.floats(),
)
def test_every_numeric_field_accepts_exactly_its_documented_range(
    field: str, number: float
) -> None:
    make, valid = RANGES[field]
    if field in INT_FIELDS and isinstance(number, float):
        return  # the annotation says int; a float is a type error, not a range question
    name = field.split(".")[1]
    if valid(number):
        make(number)
        return
    with pytest.raises(ConfigError, match=name) as caught:
        make(number)
    assert repr(number) in str(caught.value)


def test_budget_has_one_definition_that_files_decode_into(tmp_path: Path) -> None:
    team = _write(
        tmp_path / "team.yaml",
        "name: t\nworkers: [{name: a, description: d}]\nbudget: {tokens: 5}\n",
    )
    config = load_config(team)
    assert type(config.budget) is Budget  # no BudgetConfig twin to convert from
    assert config.budget == Budget(tokens=5)
    assert not hasattr(regiment.config, "BudgetConfig")
    assert not hasattr(regiment.hierarchy, "BudgetConfig")
    bad = _write(
        tmp_path / "bad.yaml",
        "name: t\nworkers: [{name: a, description: d}]\nbudget: {rounds: 0}\n",
    )
    assert _error(bad) == (f"{bad}: budget.rounds: must be a whole number >= 1; got 0")


@pytest.mark.parametrize(
    ("section", "line", "key", "made"),
    [
        ("[[workers]]", "step_timeout = -5", "workers[0].step_timeout", lambda: Worker(name="billing", description="d", model=MODEL, step_timeout=-5.0)),
        ("[[workers]]", "step_timeout = nan", "workers[0].step_timeout", lambda: Worker(name="billing", description="d", model=MODEL, step_timeout=math.nan)),
        ("[[workers]]", "max_iterations = 0", "workers[0].max_iterations", lambda: Worker(name="billing", description="d", model=MODEL, max_iterations=0)),
        ("[compression]", "window_fraction = 2.0", "compression.window_fraction", lambda: Compression(window_fraction=2.0)),
        ("[compression]", "context_window = 0", "compression.context_window", lambda: Compression(context_window=0)),
        ("[compression]", "threshold_tokens = -1", "compression.threshold_tokens", lambda: Compression(threshold_tokens=-1)),
        ("[budget]", "tokens = -1", "budget.tokens", lambda: Budget(tokens=-1)),
        ("[budget]", "wall_clock = inf", "budget.wall_clock", lambda: Budget(wall_clock=math.inf)),
        ("[planner]", "max_steps = 0", "planner.max_steps", lambda: Planner(model=MODEL, max_steps=0)),
    ],
)  # fmt: skip
def test_a_file_and_code_get_the_same_range_error(
    tmp_path: Path, section: str, line: str, key: str, made: Callable[[], object]
) -> None:
    text = TEAM + f"{line}\n" if section == "[[workers]]" else TEAM + f"{section}\n{line}\n"
    team = _write(tmp_path / "team.toml", text)
    from_file = _error(team)
    with pytest.raises(ConfigError) as caught:
        made()
    problem = str(caught.value).split(f"{key.rsplit('.', 1)[1]} ", 1)[1]
    assert from_file == f"{team}: {key}: {problem}"


@pytest.mark.parametrize(
    ("line", "key", "gets"),
    [
        ("step_timeout = -5", "step_timeout", "in code only; a team file without the key gets 300.0"),
        ("cancel_grace = 0", "cancel_grace", "in code only; a team file without the key gets 5.0"),
        ("approval_timeout = 0", "approval_timeout", "in a team file: leave the key out"),
    ],
)  # fmt: skip
def test_a_range_error_never_says_leaving_out_a_key_with_a_default_means_no_limit(
    tmp_path: Path, line: str, key: str, gets: str
) -> None:
    # Leaving step_timeout out is 300 s, not "no limit": only approval_timeout's default is None.
    message = _error(_write(tmp_path / "team.toml", TEAM + f"{line}\n"))
    assert (
        f"workers[0].{key}: must be a finite number of seconds > 0, or None for no limit ({gets}); got "
        in message
    )


def test_a_misspelled_on_exhausted_is_refused_in_code_as_in_a_file() -> None:
    # A typo must not quietly mean "partial" (a run that should raise would not).
    with pytest.raises(
        ConfigError, match=r"on_exhausted must be 'partial' or 'raise'; got 'raises'"
    ):
        Budget(tool_calls=3, on_exhausted="raises")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "made",
    [
        lambda: Planner(model="anthropic:claude-sonnet-4-5"),  # type: ignore[arg-type]
        lambda: Planner(model=MODEL, synthesizer_model="scripted"),  # type: ignore[arg-type]
        lambda: Worker(name="billing", description="d", model=None),  # type: ignore[arg-type]
        lambda: Compression(model=object()),  # type: ignore[arg-type]
    ],
    ids=["spec-string", "synthesizer", "none", "object"],
)
def test_a_model_that_is_not_a_model_is_refused_when_the_config_is_made(
    made: Callable[[], object],
) -> None:
    # Not at the run's first model call, as an AttributeError inside an actor.
    with pytest.raises(ConfigError, match=r"must be a Model \(AnthropicModel"):
        made()


def test_what_the_file_got_wrong_is_said_once_and_names_what_fits(tmp_path: Path) -> None:
    # The file once, not twice; an enum's values; [settings] as the file writes it.
    team = _write(tmp_path / "team.toml", TEAM + "[settings]\nmax_token = 5\n")
    assert _error(team).startswith(f"{team}: settings.max_token: unknown setting 'max_token';")
    team = _write(tmp_path / "enum.toml", TEAM + '[budget]\non_exhausted = "explode"\n')
    assert _error(team) == (
        f"{team}: budget.on_exhausted: invalid enum value 'explode' (one of: 'partial', 'raise')"
    )
    team = _write(tmp_path / "key.toml", "colour = 1\n" + TEAM)
    message = _error(team)
    assert "`[settings]`" in message
    assert "`[checks.<name>]`" in message
    assert "`[settings.<name>]`" not in message


def test_a_tools_module_that_imports_a_missing_package_is_told_apart_from_a_missing_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The module was found; a package it imports was not. The error asked whether the
    # module's directory was on the import path, which it was.
    (tmp_path / "needs_numpyx.py").write_text("import numpyx_not_installed\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    team = _write(tmp_path / "team.toml", TEAM + 'tools = ["needs_numpyx:f", "nowhere_mod:g"]\n')
    assert _error(team) == (
        f"{team}: workers[0].tools[0]: cannot import 'needs_numpyx:f': importing 'needs_numpyx' "
        "raised ModuleNotFoundError: no module named 'numpyx_not_installed', which it imports "
        "(install the package that provides it, or put its directory on the import path)"
    )
    _write(team, TEAM + 'tools = ["nowhere_mod:g"]\n')
    assert _error(team) == (
        f"{team}: workers[0].tools[0]: cannot import 'nowhere_mod:g': no module named "
        "'nowhere_mod' (is its directory on the import path? `regiment` adds the current "
        "directory, or the one --app-dir DIR names; a program that calls load_team or "
        "build_team adds it to sys.path itself)"
    )


def test_a_program_told_to_put_the_tools_directory_on_sys_path_can_load_the_team(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # load_team from a script run elsewhere: the error spoke only of `regiment` and
    # --app-dir, which a program does not have.
    (tmp_path / "elsewhere_tools.py").write_text("def g(x: int) -> int:\n    return x\n")
    team = _write(tmp_path / "team.toml", TEAM + 'tools = ["elsewhere_tools:g"]\n')
    with pytest.raises(ConfigError, match=r"program that calls load_team .* sys\.path itself"):
        load_team(team)
    monkeypatch.syspath_prepend(str(tmp_path))  # what the error says to do
    assert load_team(team).workers[0].name == "billing"


def test_a_module_that_exits_when_imported_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `regiment validate` ended silently with the module's exit code (3 here).
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    team = _write(tmp_path / "team.toml", TEAM + 'tools = ["exits_on_import:f"]\n')
    assert _error(team) == (
        f"{team}: workers[0].tools[0]: cannot import 'exits_on_import:f': importing "
        "'exits_on_import' called sys.exit(3); a module a team file names must not exit when "
        "imported (put a script's work under `if __name__ == '__main__':`)"
    )


@pytest.mark.parametrize("suffix", ["toml", "yaml"])
def test_a_byte_order_mark_first_is_no_mistake(tmp_path: Path, suffix: str) -> None:
    # Saved by Notepad as "UTF-8 with BOM": the TOML one was "not valid TOML: Invalid
    # statement (at line 1, column 1)", of a first line that looks right.
    text = (
        TEAM if suffix == "toml" else "name: t\nworkers:\n  - name: billing\n    description: d\n"
    )
    plain = load_config(_write(tmp_path / f"plain.{suffix}", text))
    marked = _write(tmp_path / f"marked.{suffix}", b"\xef\xbb\xbf" + text.encode())
    assert load_config(marked) == plain


def test_a_yaml_file_without_pyyaml_gives_the_install_line(tmp_path: Path) -> None:
    # It said "install regiment[cli]": not a command, and unquoted a shell's glob.
    # (tests/cli/test_plain_install.py checks it in an environment without pyyaml; here,
    # `import yaml` fails as it does there.)
    team = _write(tmp_path / "team.yaml", "name: t\n")
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "from regiment.config import load_config\n"
        f"load_config({str(team)!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == (
        f"regiment.errors.ConfigError: {team}: reading YAML needs pyyaml, the cli extra: "
        "pip install 'regiment[cli]' (or write the team file in TOML)"
    )


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("concurrency = 2\nconcurrency = 3\n", "the key `concurrency` is given twice in its"),
        ("[planner]\nmax_steps = 2\n[planner]\nname = 'p'\n", "`[planner]` names a table"),
        ("[workers]\nname = 'x'\n", "`[workers]` names a table (or key) the file has already"),
    ],
)
def test_a_key_or_table_given_twice_says_which_and_what_to_do(
    tmp_path: Path, extra: str, said: str
) -> None:
    # It was tomllib's "Cannot overwrite a value (at line 7, column 16)" alone, which names
    # neither the key nor that it is there twice (the YAML error said "given twice").
    path = _write(tmp_path / "team.toml", TEAM + extra)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: not valid TOML: Cannot ")
    assert said in str(caught.value)


@pytest.mark.parametrize(
    ("line", "key", "made"),
    [
        ('name = ""', "name", lambda: Team(name="", planner=Planner(model=MODEL), workers=[WORKER])),
        ("concurrency = 0", "concurrency", lambda: Team(name="t", planner=Planner(model=MODEL), workers=[WORKER], concurrency=0)),
        ("output_retries = -1", "output_retries", lambda: Team(name="t", planner=Planner(model=MODEL), workers=[WORKER], output_retries=-1)),
        ('name = "bill ing"', "workers[0].name", lambda: Worker(name="bill ing", description="d", model=MODEL)),
        ('description = " "', "checks.c.description", lambda: Check(description=" ", predicate=bool)),
        ('description = ""', "workers[0].description", lambda: Worker(name="billing", description="", model=MODEL)),
    ],
)  # fmt: skip
def test_a_team_level_value_out_of_range_names_its_key_and_line(
    tmp_path: Path, line: str, key: str, made: Callable[[], object]
) -> None:
    # These said `team 't': concurrency must be ...` (or `Team: name ...`, `workers[0]:
    # worker name ...`) with no key path, so the command could not give the line either.
    if key == "name":
        text = TEAM.replace('name = "t"', line)
    elif key == "workers[0].name":
        text = TEAM.replace('name = "billing"', line)
    elif key == "workers[0].description":  # the planner picks workers by it
        text = TEAM.replace('description = "Checks refunds."', line)
    elif key.startswith("checks."):  # "[checks.c]" has a description, then a predicate
        text = TEAM + f'\n[checks.c]\n{line}\npredicate = "examples.refund.checks:eligible"\n'
    else:
        text = TEAM.replace('name = "t"\n', f'name = "t"\n{line}\n')
    team = _write(tmp_path / "team.toml", text)
    from_file = _error(team)
    with pytest.raises(ConfigError) as caught:
        made()
    problem = str(caught.value).split(f"{key.rsplit('.', 1)[-1]} ", 1)[1]
    assert from_file == f"{team}: {key}: {problem}"
    number = text.splitlines().index(line) + 1
    assert with_line(from_file).startswith(f"{team}:{number}: {key}: ")


_FUNCTIONS = """
def no_argument():
    return "x"


def two_arguments(request, extra):
    return "x"


def one_and_defaults(request, extra=1, *more, flag=False):
    return "x"


def only_keywords(*, request):
    return "x"
"""


@pytest.mark.parametrize(
    ("text", "key", "spec", "shape"),
    [
        ('brain = "arity_funcs:no_argument"', "brain", "arity_funcs:no_argument", "no_argument()"),
        ('brain = "arity_funcs:two_arguments"', "brain", "arity_funcs:two_arguments", "two_arguments(request, extra)"),
        ('brain = "arity_funcs:only_keywords"', "brain", "arity_funcs:only_keywords", "only_keywords(*, request)"),
        ('[checks.c]\ndescription = "d"\npredicate = "arity_funcs:no_argument"', "checks.c.predicate", "arity_funcs:no_argument", "no_argument()"),
        ('[checks.c]\ndescription = "d"\npredicate = "arity_funcs:one_and_defaults"\nexplain = "arity_funcs:two_arguments"', "checks.c.explain", "arity_funcs:two_arguments", "two_arguments(request, extra)"),
    ],
)  # fmt: skip
def test_a_function_that_cannot_take_its_one_argument_is_refused_naming_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, key: str, spec: str, shape: str
) -> None:
    # A brain of no argument passed `regiment validate`, then every run failed with "the plan
    # model call failed: ... TypeError: no_argument() takes 0 positional arguments but 1 was
    # given", naming neither the file nor the key; a check's predicate failed each step's check.
    (tmp_path / "arity_funcs.py").write_text(_FUNCTIONS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    head, _, tail = TEAM.partition("[[workers]]")
    body = (
        head.replace('brain = "examples.refund.brain:refund_brain"\n', "")
        if key == "brain"
        else head
    )
    top, table = (text, "") if key == "brain" else ("", text)
    team = _write(tmp_path / "team.toml", f"{body}{top}\n[[workers]]{tail}{table}\n")
    what = "a ModelRequest" if key == "brain" else "a StepReport"
    assert _error(team) == (
        f"{team}: {key}: {spec!r} is {shape}, which cannot be called with one argument; "
        f"expected a function of {what}"
    )


def test_a_function_of_one_argument_with_defaults_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "arity_funcs.py").write_text(_FUNCTIONS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    head, _, tail = TEAM.partition("[[workers]]")
    body = head.replace("examples.refund.brain:refund_brain", "arity_funcs:one_and_defaults")
    text = f'{body}[[workers]]{tail}[checks.c]\ndescription = "d"\npredicate = "arity_funcs:one_and_defaults"\n'
    team = load_team(_write(tmp_path / "team.toml", text))
    assert set(team.checks) == {"c"}
