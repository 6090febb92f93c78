"""``regiment show`` gives the model and tool calls a run made, as its last end counted them.

It showed a run's usage but no ``model_calls``/``tool_calls``, which the run's last line
and its closing event have: a paused run and the same run resumed (the whole run's count,
both legs), a failed run, each on a real SQLite journal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from regiment._text import counted
from regiment.journal import RunCreated, SqliteJournal

from .helpers import run_cli, write_team
from .test_approvals_cli import GOAL, REPO, TEAM

pytestmark = pytest.mark.anyio


def _closing(out: str) -> dict[str, Any]:
    """The last event ``--events jsonl`` wrote on stdout: the run's ``RunCompleted``."""
    last: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert last["type"] == "RunCompleted", last
    return last


async def _shown(run_id: str, journal: str) -> tuple[list[str], dict[str, Any]]:
    code, text, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    assert code == 0, err
    return text.splitlines(), json.loads(out)


def _calls_line(model_calls: int, tool_calls: int) -> str:
    return f"calls: {counted(model_calls, 'model call')}, {counted(tool_calls, 'tool call')}"


async def test_show_counts_a_paused_run_then_the_whole_resumed_run(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    argv = ("--model", "scripted", "--journal", journal, "--events", "jsonl")
    code, out, err = await run_cli("run", TEAM, GOAL, *argv)
    assert code == 3, err
    paused = _closing(out)["result"]
    run_id = paused["run_id"]
    assert paused["status"] == "paused"
    # The run's answer and the command's paused line say it in the same words.
    assert paused["answer"] == "paused: 1 approval pending"
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    assert line.startswith(f"{paused['answer']} — regiment approvals ")
    lines, shown = await _shown(run_id, journal)
    # show had no model_calls/tool_calls (and no usage for a paused run).
    assert (shown["model_calls"], shown["tool_calls"]) == (
        paused["model_calls"],
        paused["tool_calls"],
    )
    assert shown["usage"] == paused["usage"]
    assert paused["model_calls"] > 0
    assert _calls_line(paused["model_calls"], paused["tool_calls"]) in lines

    code, out, err = await run_cli("approvals", run_id, "--json", "--journal", journal)
    assert code == 0, err
    (request,) = [json.loads(x)["request_id"] for x in out.splitlines()]
    code, _, err = await run_cli("approve", run_id, request, "--journal", journal)
    assert code == 0, err
    code, out, err = await run_cli("resume", TEAM, run_id, *argv)
    assert code == 0, err
    done = _closing(out)["result"]
    assert done["status"] == "completed"
    # Both legs, the whole run's: as many as the same team makes with no approval asked.
    unasked = str(REPO / "examples" / "refund" / "team.toml")
    code, out, err = await run_cli(
        "run", unasked, GOAL, "--model", "scripted", "--no-journal", "--events", "jsonl"
    )
    assert code == 0, err
    whole = _closing(out)["result"]
    assert (done["model_calls"], done["tool_calls"]) == (whole["model_calls"], whole["tool_calls"])
    assert done["model_calls"] > paused["model_calls"]
    calls = (
        f"{counted(done['model_calls'], 'model call')}, {counted(done['tool_calls'], 'tool call')}"
    )
    assert f"run completed: {calls}, " in err  # the resume's last line
    lines, shown = await _shown(run_id, journal)
    assert (shown["model_calls"], shown["tool_calls"]) == (done["model_calls"], done["tool_calls"])
    assert shown["usage"] == done["usage"]
    assert _calls_line(done["model_calls"], done["tool_calls"]) in lines
    assert lines.index(f"calls: {calls}") + 1 == next(
        i for i, x in enumerate(lines) if x.startswith("usage: ")
    )


async def test_show_counts_a_failed_runs_calls(tmp_path: Path) -> None:
    team = write_team(tmp_path, "garbage")  # a planner that never plans right
    text = team.read_text(encoding="utf-8")
    team.write_text(text + "\n[planner]\nmax_plan_attempts = 1\n", encoding="utf-8")
    journal = str(tmp_path / "runs.db")
    argv = ("--app-dir", str(tmp_path), "--journal", journal, "--events", "jsonl")
    code, out, err = await run_cli("run", str(team), "do it", *argv)
    assert code == 1, err
    failed: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert (failed["type"], failed["model_calls"], failed["tool_calls"]) == ("RunFailed", 1, 0)
    lines, shown = await _shown(failed["run_id"], journal)
    assert shown["status"] == "failed"
    assert (shown["model_calls"], shown["tool_calls"]) == (1, 0)
    assert "calls: 1 model call, 0 tool calls" in lines


async def test_a_run_with_no_end_has_no_counts(tmp_path: Path) -> None:
    # Not 0: nothing counted them yet (its process died, or it runs elsewhere).
    path = tmp_path / "runs.db"
    async with await SqliteJournal.open(path) as journal:
        run = RunCreated(
            run_id="run-1",
            team="t",
            config_hash="c",
            goal="g",
            session=None,
            created_at=datetime(2027, 1, 1, tzinfo=UTC),
        )
        await journal.release(await journal.create_run(run, owner="o", ttl=30))
    lines, shown = await _shown("run-1", str(path))
    assert (shown["model_calls"], shown["tool_calls"], shown["usage"]) == (None, None, None)
    assert not [x for x in lines if x.startswith(("calls:", "usage:"))]
