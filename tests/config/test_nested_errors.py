"""Every error raised while loading a nested team file names that file and the key
that named it. Only a file that could not be read said so; one that could not be built
(an import, a model spec, a value) named the nested file alone, which a user who ran the
outer file may never have heard of."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import check_config, load_team, team_files
from regiment.errors import ConfigError
from regiment.hierarchy import load_config

TOP = """name = "top"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "desk"
description = "Answers the customer."

[[workers]]
name = "sub"
description = "Handles refunds."
team = "{mid}"
"""

MID = """name = "mid"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "billing"
description = "Issues refunds."
{extra}
"""

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))  # examples.refund


def _tree(tmp_path: Path, extra: str, *, deeper: bool = False) -> tuple[Path, Path, Path]:
    top = tmp_path / "top.toml"
    mid = tmp_path / "teams" / "mid.toml"
    leaf = tmp_path / "teams" / "leaf.toml"
    mid.parent.mkdir()
    top.write_text(TOP.format(mid="teams/mid.toml"), encoding="utf-8")
    if deeper:  # the mistake is one file further down: top -> mid -> leaf
        mid.write_text(TOP.format(mid="leaf.toml").replace('"top"', '"mid"'), encoding="utf-8")
        leaf.write_text(MID.format(extra=extra), encoding="utf-8")
    else:
        mid.write_text(MID.format(extra=extra), encoding="utf-8")
    return top, mid, leaf


def _error(top: Path, *, check: bool) -> str:
    config = load_config(top)
    if check:
        with pytest.raises(ConfigError) as caught:
            check_config(config, source=str(top))
    else:
        with pytest.raises(ConfigError) as caught:
            load_team(top)  # the files' own models: a spec is read, not replaced
    return str(caught.value)


NAMED_BY = "(the team file named by {top}: workers[1].team = 'teams/mid.toml')"

MISTAKES = {
    "an import": ('tools = ["nowhere:tool"]', "workers[0].tools[0]: cannot import 'nowhere:tool'"),
    "a value": ("max_iterations = 0", "workers[0].max_iterations: must be"),
    "a model spec": ('model = "acme:x"', "workers[0].model: "),
    "a guardrail": ('guardrails = ["nowhere:guard"]', "workers[0].guardrails[0]: cannot import"),
    "a description": ('description = ""', "workers[0].description: must say what"),
}


@pytest.mark.parametrize("check", [False, True], ids=["load_team", "check_config"])
@pytest.mark.parametrize(("extra", "said"), MISTAKES.values(), ids=MISTAKES.keys())
def test_a_nested_files_mistake_names_the_file_and_what_named_it(
    tmp_path: Path, extra: str, said: str, check: bool
) -> None:
    if extra.startswith("description"):  # in place of the entry's own
        extra, text = "", MID.replace('description = "Issues refunds."', extra)
    else:
        text = MID
    top, mid, _ = _tree(tmp_path, extra)
    mid.write_text(text.format(extra=extra), encoding="utf-8")
    message = _error(top, check=check)
    assert message.startswith(f"{mid}: {said}"), message
    assert message.endswith(NAMED_BY.format(top=top)), message


def test_a_mistake_two_files_down_names_each_file_on_the_way(tmp_path: Path) -> None:
    top, mid, leaf = _tree(tmp_path, "max_iterations = 0", deeper=True)
    message = _error(top, check=True)
    assert message.startswith(f"{leaf}: workers[0].max_iterations: must be"), message
    assert message.endswith(
        f"(the team file named by {mid}: workers[1].team = 'leaf.toml') " + NAMED_BY.format(top=top)
    ), message


def test_team_files_names_what_led_to_a_deeper_file_it_cannot_read(tmp_path: Path) -> None:
    top, mid, leaf = _tree(tmp_path, "max_iteration = 3", deeper=True)
    with pytest.raises(ConfigError) as caught:
        team_files(load_config(top), source=str(top))
    message = str(caught.value)
    assert message.startswith(f"{leaf}: workers[0]: unknown key `max_iteration =`"), message
    assert message.endswith(
        f"(the team file named by {mid}: workers[1].team = 'leaf.toml') " + NAMED_BY.format(top=top)
    ), message


def test_an_error_about_the_outer_files_own_key_is_not_said_to_be_nested(tmp_path: Path) -> None:
    top = tmp_path / "top.toml"
    top.write_text(TOP.format(mid="nope.toml"), encoding="utf-8")
    message = _error(top, check=True)
    assert message.startswith(f"{top}: workers[1].team: the team file"), message
    assert "named by" not in message
