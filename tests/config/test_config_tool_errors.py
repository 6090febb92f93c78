"""``on_tool_error`` in a team file's ``[[workers]]`` entry, as ``Worker(on_tool_error=...)``
takes it (issue #14 item 13: "per tool/worker"; the README: a file and code are two doors
to one model). The key was missing, so a file could not make a tool's exception fail the step."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from regiment.config import load_team
from regiment.errors import ConfigError, StepFailed
from regiment.hierarchy import Worker

MODULE = '''
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, text_response, tool_call_response
from regiment.tools import tool


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def brain(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response('{"steps": [{"id": "s1", "description": "divide 1 by 0"}]}')
    if request.role == "worker":
        if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
            return text_response("could not divide")
        return tool_call_response("divide", {"a": 1, "b": 0}, call_id="c1")
    return text_response("the answer")
'''


def _team(directory: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> Path:
    module = f"file_divide_{uuid.uuid4().hex[:8]}"
    (directory / f"{module}.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(directory))
    team = directory / "team.toml"
    team.write_text(
        f'name = "sums"\nbrain = "{module}:brain"\n\n[[workers]]\nname = "billing"\n'
        f'description = "Does sums."\ntools = ["{module}:divide"]\n{entry}',
        encoding="utf-8",
    )
    return team


@pytest.mark.anyio
async def test_on_tool_error_raise_in_a_team_file_fails_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = 'on_tool_error = "raise"\n\n[budget]\nreplans = 0\n'
    team = load_team(_team(tmp_path, monkeypatch, entry))
    worker = team.workers[0]
    assert isinstance(worker, Worker)
    assert worker.on_tool_error == "raise"
    with pytest.raises(StepFailed) as caught:
        await team.run("divide 1 by 0")
    assert caught.value.failed is not None
    (report,) = caught.value.failed.steps
    assert report.status == "failed"
    assert report.error_type == "regiment.errors.ToolError"
    assert "ZeroDivisionError: division by zero (on_tool_error='raise'" in (report.error or "")


@pytest.mark.anyio
async def test_without_the_key_the_model_is_told_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = await load_team(_team(tmp_path, monkeypatch, "")).run("divide 1 by 0")
    assert result.status == "completed"
    (outcome,) = result.steps[0].tool_outcomes
    assert outcome.is_error
    assert outcome.error_type == "ZeroDivisionError"


def test_a_wrong_value_names_the_file_the_key_and_the_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _team(tmp_path, monkeypatch, 'on_tool_error = "explode"\n')
    with pytest.raises(ConfigError) as caught:
        load_team(path)
    assert str(caught.value) == (
        f"{path}: workers[0].on_tool_error: invalid enum value 'explode' "
        "(one of: 'tell_model', 'raise')"
    )


def test_a_team_entry_takes_no_on_tool_error(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text(
        'name = "t"\n\n[[workers]]\nname = "sums"\ndescription = "Does sums."\n'
        'team = "other.toml"\non_tool_error = "raise"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"workers\[0\]\.on_tool_error: a worker with team ="):
        load_team(path)
