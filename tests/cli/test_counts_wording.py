"""A count the command prints takes the singular for one: "1 model call", not "1 model calls"."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment._text import counted
from regiment.cli._progress import RunProgress
from regiment.hierarchy import events as ev
from regiment.hierarchy.plan import Plan, PlanStep
from tests.cli.helpers import run_cli, write_team


def test_counted_takes_the_singular_for_one_only() -> None:
    assert counted(1, "tool call") == "1 tool call"
    assert [counted(n, "step") for n in (0, 2)] == ["0 steps", "2 steps"]
    assert counted(1204, "token", grouped=True) == "1,204 tokens"
    assert counted(1, "token", grouped=True) == "1 token"


@pytest.mark.anyio
async def test_a_run_of_one_model_call_says_1_model_call(tmp_path: Path) -> None:
    team = write_team(tmp_path, "garbage")  # a planner that never plans right
    text = team.read_text(encoding="utf-8")
    team.write_text(text + "\n[planner]\nmax_plan_attempts = 1\n", encoding="utf-8")
    code, _, err = await run_cli("run", str(team), "do it", "--app-dir", str(tmp_path))
    assert code == 1
    last = next(line for line in err.splitlines() if "] run failed (PlanError): " in line)
    # It said "1 model calls, 0 tool calls, N tokens".
    assert "run failed (PlanError): 1 model call, 0 tool calls, " in last
    assert "model calls" not in last


def test_an_interrupted_run_of_a_one_step_plan_says_1_step() -> None:
    progress = RunProgress()
    plan = Plan(version=1, steps=(PlanStep(id="s1", description="wait", worker="waiter"),))
    progress.apply(ev.PlanCreated(run_id="run-1", plan=plan))
    # It said "plan v1: 0 of 1 steps done".
    assert "plan v1: 0 of 1 step done" in progress.summary()
