"""A tool that raises shows in the command's output: plain lines and the live table."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from regiment.cli import run_async
from regiment.cli._live import LiveView
from regiment.cli._progress import RunProgress, TokenMeter
from regiment.cli._view import describe
from regiment.hierarchy import ToolFailed

MODULE = '''
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, text_response, tool_call_response
from regiment.tools import tool


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "divide 1 by 0"}]}')
    if request.role == "worker":
        last = request.messages[-1].parts
        if any(isinstance(p, ToolResultPart) for p in last):
            return text_response("could not divide")
        return tool_call_response("divide", {"a": 1, "b": 0}, call_id="c1")
    return text_response("no answer: division by zero")
'''

FAILED = ToolFailed(
    run_id="r1",
    plan_version=1,
    step_id="s1",
    worker="billing",
    tool="divide",
    call_id="c1",
    error_type="ZeroDivisionError",
    message="ZeroDivisionError: division by zero",
)


def _team(directory: Path) -> Path:
    module = f"cli_divide_{uuid.uuid4().hex[:8]}"
    (directory / f"{module}.py").write_text(MODULE, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        f"""
name = "sums"
model = "scripted"
brain = "{module}:brain"

[[workers]]
name = "billing"
description = "Does sums."
tools = ["{module}:divide"]
""",
        encoding="utf-8",
    )
    return team


def test_the_plain_line_names_worker_step_tool_and_error() -> None:
    assert describe(FAILED) == "  !! billing s1: divide failed: ZeroDivisionError: division by zero"


def test_the_live_table_lists_failed_tool_calls() -> None:
    progress = RunProgress()
    progress.apply(FAILED)
    out = io.StringIO()
    view = LiveView(progress, Console(file=out, width=120, force_terminal=False), TokenMeter())
    with view:
        view.show(FAILED)
    assert "billing s1: divide failed: ZeroDivisionError: division by zero" in out.getvalue()


@pytest.mark.anyio
async def test_a_run_prints_the_failed_call(tmp_path: Path) -> None:
    team = _team(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", str(team), "divide", "--app-dir", str(tmp_path), "--plain"]
    assert await run_async(argv, stdout=out, stderr=err, environ={}) == 0
    lines = err.getvalue().splitlines()
    failed = [line for line in lines if "divide failed" in line]
    assert len(failed) == 1
    assert failed[0].endswith(
        "s]   !! billing s1: divide failed: ZeroDivisionError: division by zero"
    )
    assert out.getvalue().strip() == "no answer: division by zero"
