"""A tool (made with ``@tool``) named where a plain function of one argument is wanted:
a brain, a check's predicate or explain. A ``Tool`` is callable, so it passed the check
and ``regiment validate`` said ok; every run then failed, its brain's reply the request it
was given, shown whole ('its script returned ModelRequest(system=...) for a planner
request'), or each check failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import check_config, load_config, load_team
from regiment.errors import ConfigError

_TOOLS = '''
from regiment import tool


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def brain(request):
    return "{}"
'''


_CHECK = '[checks.c]\ndescription = "d"\npredicate = "{}"\n'


@pytest.mark.parametrize(
    ("brain", "checks", "key", "expected"),
    [
        ("tool_funcs:echo", "", "brain", "a function of a ModelRequest"),
        (
            "tool_funcs:brain",
            _CHECK.format("tool_funcs:echo"),
            "checks.c.predicate",
            "a function of a StepReport",
        ),
        (
            "tool_funcs:brain",
            _CHECK.format("tool_funcs:brain") + 'explain = "tool_funcs:echo"\n',
            "checks.c.explain",
            "a function of a StepReport",
        ),
    ],
)
def test_a_tool_where_a_function_is_wanted_is_refused_naming_its_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    brain: str,
    checks: str,
    key: str,
    expected: str,
) -> None:
    (tmp_path / "tool_funcs.py").write_text(_TOOLS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    team = tmp_path / "team.toml"
    text = f'name = "t"\nbrain = "{brain}"\n\n[[workers]]\nname = "w"\ndescription = "d"\n\n'
    team.write_text(text + checks, encoding="utf-8")
    want = (
        f"{team}: {key}: 'tool_funcs:echo' is the tool 'echo' (made with @tool), which a "
        f"worker calls; expected {expected}, a plain function"
    )
    with pytest.raises(ConfigError) as validated:  # what `regiment validate` runs
        check_config(load_config(team), source=str(team))
    assert str(validated.value) == want
    with pytest.raises(ConfigError) as built:  # what `regiment run` builds
        load_team(team)
    assert str(built.value) == want
