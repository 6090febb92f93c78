"""Structured answers in team files: ``output_type = "module:Model"``."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.errors import ConfigError

MODULE = """
import json

from pydantic import BaseModel


class Verdict(BaseModel):
    order_id: str
    refund: bool


NOT_A_MODEL = 3


def brain(request):
    match request.role:
        case "planner":
            return json.dumps({"steps": [{"description": "check A-1", "worker": "orders"}]})
        case "worker":
            return "A-1 arrived broken"
        case "synthesizer":
            return '{"order_id": "A-1", "refund": true}'
    raise AssertionError(request.role)
"""

TEAM = """
name = "t"
brain = "answer_types:brain"
output_type = "answer_types:Verdict"
output_retries = 1

[[workers]]
name = "orders"
description = "order lookups"
"""


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "answer_types.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.anyio
async def test_a_team_file_output_type_makes_runs_return_the_instance(files: Path) -> None:
    path = files / "team.toml"
    path.write_text(TEAM)
    team = load_team(path)
    assert team.output_type is not None
    assert team.output_type.__name__ == "Verdict"
    assert team.output_retries == 1

    result = await team.run("refund A-1?")

    assert isinstance(result.output, team.output_type)
    assert result.output.model_dump() == {"order_id": "A-1", "refund": True}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("answer_types:NOT_A_MODEL", "'answer_types:NOT_A_MODEL' is an int; expected a pydantic"),
        ("answer_types:brain", "is a function; expected a pydantic model class"),
        ("answer_types:Missing", "cannot import 'answer_types:Missing': no attribute 'Missing'"),
        ("no_such_module:Verdict", "no module named 'no_such_module'"),
        ("Verdict", "expected 'module:attribute'"),
    ],
)
def test_a_bad_output_type_is_a_config_error_naming_the_key(
    files: Path, spec: str, expected: str
) -> None:
    path = files / "team.toml"
    path.write_text(TEAM.replace('"answer_types:Verdict"', f'"{spec}"'))
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: output_type: ")
    assert expected in message


def test_a_negative_retry_count_is_a_config_error(files: Path) -> None:
    path = files / "team.toml"
    path.write_text(TEAM.replace("output_retries = 1", "output_retries = -1"))
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    assert str(caught.value) == f"{path}: output_retries: must be 0 or more, got -1"
