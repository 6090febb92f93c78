"""The mistakes README's "Team files" shows are what regiment says, word for word: its
list of what ``examples.refund.tools`` has lacked ``Ledger``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from regiment.config import check_config, load_config
from regiment.errors import ConfigError

from .test_config import GOOD, _write

README = Path(__file__).resolve().parents[2] / "README.md"

# What each line of the README's block of mistakes is made from: the refund team's file
# with one mistake.
MISTAKES = (
    GOOD.replace("examples.refund.tools:email_customer", "examples.refund.tools:send_mail"),
    GOOD.replace("max_steps = 6", "max_step = 6"),
    GOOD.replace("[[workers]]", "[[worker]]", 1),
    GOOD.replace('predicate = "examples.refund.checks:eligible"\n', ""),
    GOOD.replace('name = "billing"\n', 'name = "billing"\nstep_timeout = -5\n'),
    GOOD.replace("model_calls = 40", 'model_calls = "8"'),
    GOOD.replace("[[workers]]", "[workers]", 1).split("[[workers]]")[0],
)


def _readme_lines() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"Decoding is strict.*?```text\n(.*?)```", text, re.DOTALL)
    assert block is not None, "README's block of team file mistakes moved"
    return block[1].splitlines()


def test_the_readme_shows_one_line_per_mistake() -> None:
    assert len(_readme_lines()) == len(MISTAKES)


@pytest.mark.parametrize("index", range(len(MISTAKES)))
def test_each_mistake_the_readme_shows_is_said_so(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # errors start with the path as given
    _write(tmp_path, MISTAKES[index])
    with pytest.raises(ConfigError) as caught:
        check_config(load_config("team.toml"), source="team.toml")
    assert str(caught.value) == _readme_lines()[index]
