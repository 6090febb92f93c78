"""A team file whose models need an optional extra that is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from regiment.cli import main
from regiment.config import check_config, parse_config
from regiment.errors import ConfigError

TEAM = """
name = "t"
model = "scripted"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "w"
description = "works"
model = "{spec}"
"""


@pytest.mark.parametrize("spec", ["openai:gpt-4.1", "openai-compatible:llama3.1"])
def test_validate_says_which_extra_a_model_needs(
    spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `regiment validate` said "ok" for a file whose models need the openai SDK on a
    # machine without it; only `run` then failed. It checks keys nowhere (a CI machine
    # has none), but an extra the file needs is part of the install being checked.
    monkeypatch.delitem(sys.modules, "regiment.models._openai", raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)  # as if not installed
    config = parse_config(TEAM.format(spec=spec), format="toml", source="t.toml")
    with pytest.raises(ConfigError) as caught:
        check_config(config, source="t.toml")
    assert str(caught.value) == (
        f"t.toml: workers[0].model: {spec!r} needs the openai SDK, an optional extra: "
        "pip install 'regiment[openai]'"
    )
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(spec=spec), encoding="utf-8")
    assert main(["validate", str(team), "--app-dir", str(Path.cwd())]) == 2
    assert "pip install 'regiment[openai]'" in capsys.readouterr().err


def test_validate_passes_a_file_whose_extra_is_installed() -> None:
    config = parse_config(TEAM.format(spec="openai:gpt-4.1"), format="toml", source="t.toml")
    assert check_config(config, source="t.toml").name == "t"
