"""A value of the wrong type in a ``settings`` table says what to write, as every other
key's does (it said only ``expected `float | null`, got `str```)."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.errors import ConfigError

TOML = """name = "t"
model = "openai:gpt-4o"

[settings]
{setting}

[[workers]]
name = "w"
description = "d"
"""


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        (
            'temperature = "hot"',
            "settings.temperature: expected `float | null`, got `str`; write a number, "
            "without quotes (`temperature = 5.0`), or leave the key out",
        ),
        (
            'max_tokens = "12"',
            "settings.max_tokens: expected `int | null`, got `str`; write a whole number, "
            "without quotes (`max_tokens = 12`), or leave the key out",
        ),
        (
            'stop_sequences = "END"',
            "settings.stop_sequences: expected `array | null`, got `str`; write a list "
            "(`stop_sequences = [...]`)",
        ),
        (
            "extra = 3",
            "settings.extra: expected `object`, got `int`; write a table (`extra = {...}`)",
        ),
        ("temperature = 7", "settings.temperature: must be at least 0 and at most 2, got 7.0"),
    ],
)
def test_a_wrong_setting_says_what_to_write(tmp_path: Path, setting: str, said: str) -> None:
    path = tmp_path / "team.toml"
    path.write_text(TOML.format(setting=setting), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_team(path)
    assert str(raised.value) == f"{path}: {said}"


def test_a_workers_setting_in_yaml_is_told_in_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a key, so the settings are read
    path = tmp_path / "team.yaml"
    path.write_text(
        "name: t\nmodel: openai:gpt-4o\nworkers:\n  - name: w\n    description: d\n"
        "    settings:\n      top_p: high\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_team(path)
    assert str(raised.value) == (
        f"{path}: workers[0].settings.top_p: expected `float | null`, got `str`; write a "
        "number, without quotes (`top_p: 5.0`), or leave the key out"
    )
