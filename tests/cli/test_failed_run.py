"""A run whose step fails with no replan left, as the command shows it: the
reason once, the cancelled sibling, and what the run got to in ``--events jsonl``
and ``show``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio

REASON = "StepFailed: step s1 (break) ended failed: ModelAPIError: upstream broke; no replans left"


async def _failed_run(tmp_path: Path, *options: str) -> tuple[int, str, str]:
    team = write_team(tmp_path, "breaks", replans=0)
    journal = str(tmp_path / "runs.db")
    return await run_cli(
        "run", str(team), "Break", "--app-dir", str(tmp_path), "--journal", journal, *options
    )


async def test_plain_lines_say_why_once_and_name_the_cancelled_sibling(tmp_path: Path) -> None:
    code, out, err = await _failed_run(tmp_path)
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert [line for line in lines if "upstream broke; no replans left" in line] == [
        f"regiment: run failed: {REASON} (budget allows 0; Budget(replans=...) lets the planner"
        " try again)"
    ]  # the last line: the reason, once
    assert lines[-1].startswith("regiment: run failed:")
    assert any("s2 cancelled (waiter)" in line for line in lines)
    assert any("run failed (StepFailed): " in line and "tokens" in line for line in lines)


async def test_events_jsonl_ends_with_what_the_run_got_to(tmp_path: Path) -> None:
    code, out, _ = await _failed_run(tmp_path, "--events", "jsonl")
    assert code == 1
    last = json.loads(out.splitlines()[-1])
    assert (last["type"], last["error_type"]) == ("RunFailed", "StepFailed")
    assert [plan["version"] for plan in last["plans"]] == [1]
    assert sorted((s["step_id"], s["status"]) for s in last["steps"]) == [
        ("s1", "failed"),
        ("s2", "cancelled"),
    ]
    assert last["usage"]["input_tokens"] > 0


async def test_show_gives_a_failed_runs_step_errors_and_usage(tmp_path: Path) -> None:
    code, out, _ = await _failed_run(tmp_path, "--events", "jsonl")
    assert code == 1
    run_id = json.loads(out.splitlines()[0])["run_id"]
    journal = str(tmp_path / "runs.db")
    code, shown, err = await run_cli("show", run_id, "--journal", journal, "--json")
    assert code == 0, err
    body = json.loads(shown)
    steps = {s["step_id"]: (s["status"], s["error"]) for s in body["steps"]}
    assert steps == {
        "s1": ("failed", "ModelAPIError: upstream broke"),
        "s2": ("cancelled", "cancelled by the planner: the run is ending"),
    }
    assert body["usage"]["input_tokens"] > 0
    code, text, _ = await run_cli("show", run_id, "--journal", journal)
    assert "  v1 s1 [failed] ModelAPIError: upstream broke" in text.splitlines()
    assert "answer:" not in text  # a failed run has none; its error says why
