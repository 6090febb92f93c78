"""The ``regiment`` command: exit codes, output streams, jsonl events, validate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from regiment.cli import main

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
REFUND = str(REPO / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


async def test_run_prints_the_answer_and_falls_back_to_the_brain_without_a_key() -> None:
    code, out, err = await run_cli("run", REFUND, GOAL)
    assert code == 0, err
    assert out.startswith("Summary of what was done:")
    assert "could not be made" in out or "flagged" in out
    notes = [line for line in err.splitlines() if "ANTHROPIC_API_KEY" in line]
    assert len(notes) == 1
    assert "examples.refund.brain:refund_brain" in notes[0]
    # Not a terminal: plain event lines, showing both plan versions and the replan.
    assert "plan v1: s1 [billing]" in err
    assert "replan v1 -> v2" in err
    assert "plan v2: s1 [billing]" in err
    assert "tokens" in err


async def test_model_option_wins_over_the_fallback() -> None:
    code, _, err = await run_cli("run", REFUND, GOAL, "--model", "scripted")
    assert code == 0, err
    assert "ANTHROPIC_API_KEY" not in err


async def test_events_jsonl_on_stdout_is_one_json_object_per_line() -> None:
    code, out, err = await run_cli("run", REFUND, GOAL, "--events", "jsonl")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]  # nothing else on stdout
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RunStarted"
    assert kinds[-1] == "RunCompleted"
    assert kinds.count("PlanCreated") == 2
    assert kinds.index("CheckFailed") < kinds.index("Replanned")
    assert events[-1]["result"]["status"] == "completed"
    assert [p["version"] for p in events[-1]["result"]["plans"]] == [1, 2]


async def test_events_file_leaves_stdout_to_the_answer(tmp_path: Path) -> None:
    target = tmp_path / "events.jsonl"
    code, out, err = await run_cli(
        "run", REFUND, GOAL, "--events", "jsonl", "--events-file", str(target)
    )
    assert code == 0, err
    assert out.startswith("Summary of what was done:")
    lines = target.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["type"] == "RunCompleted"


async def test_trace_console_prints_the_span_tree() -> None:
    code, _, err = await run_cli("run", REFUND, GOAL, "--trace", "console")
    assert code == 0, err
    tree = err[err.index("\ntrace ") :]
    assert "invoke_agent refunds" in tree
    assert "plan planner  " in tree
    assert "plan v1->v2" in tree  # the replan: the planner planning again
    assert "execute_tool check_eligibility" in tree


async def test_a_run_that_fails_exits_1_with_the_reason(tmp_path: Path) -> None:
    team = write_team(tmp_path, "garbage")
    code, out, err = await run_cli("run", str(team), "do it", "--app-dir", str(tmp_path))
    assert code == 1
    assert out == ""
    assert "regiment: run failed: PlanError" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.toml", "goal"], "missing.toml: cannot read the team file"),
        (["run", REFUND, "goal", "--model", "gpt-4"], "--model: expected 'anthropic:<model id>'"),
        (["run", REFUND, "   "], "the goal is empty"),
        (["run", REFUND, "order \udcff88213"], "'\\udcff' at position 6 is a lone surrogate"),
        # it said "or None (in the service: leave the key out)", advice for code and the service
        (
            ["run", REFUND, "goal", "--session", ""],
            "or leave --session out for a run of no session",
        ),
        (
            ["run", REFUND, "goal", "--session", " "],
            "regiment: error: --session: the session is blank (' ')",
        ),
        (["run", REFUND, "goal", "--session", "t-\udcff"], "the session is not valid text"),
        # --events-file without --events jsonl, --workers ray on trio: test_flag_clashes.py
        (["validate", "team.ini"], "expected a .toml, .yaml or .yml team file"),
        (["run", REFUND, "goal", "--app-dir", "no/such/dir"], "--app-dir no/such/dir: no such"),
        (["validate", REFUND, "--app-dir", "no/such/dir"], "--app-dir no/such/dir: no such"),
        (  # it said "no such directory" of a file that is there
            ["validate", REFUND, "--app-dir", REFUND],
            f"--app-dir {REFUND}: that is a file, not a directory; give the directory the team "
            "file's module:attribute paths are imported from",
        ),
    ],
)
async def test_usage_and_config_errors_exit_2(argv: list[str], message: str) -> None:
    code, _out, err = await run_cli(*argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


async def test_claude_without_a_key_or_brain_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # the SDK reads the real environment
    team = tmp_path / "claude.toml"
    team.write_text(
        'name = "t"\nmodel = "anthropic:claude-sonnet-4-5"\n'
        '[[workers]]\nname = "w"\ndescription = "d"\n',
        encoding="utf-8",
    )
    code, _, err = await run_cli("run", str(team), "goal")
    assert code == 2
    # the key the file writes, and its line
    assert "claude.toml:2: model: no Anthropic credentials" in err
    assert "ANTHROPIC_API_KEY" in err


def test_validate_checks_a_file_without_running_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", REFUND]) == 0
    out = capsys.readouterr().out
    assert f"{REFUND}: ok, team 'refunds'" in out
    assert (
        "worker billing: anthropic:claude-sonnet-4-5; check_eligibility, issue_refund, flag_exception"
        in out
    )
    assert "check eligible: the order is eligible for a refund" in out


def test_validate_reports_a_bad_file_as_a_usage_error_without_an_event_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `main` validates outside an event loop; its errors are the same as inside one.
    assert main(["validate", str(tmp_path / "team.ini")]) == 2
    assert "expected a .toml, .yaml or .yml team file" in capsys.readouterr().err
    broken = tmp_path / "team.toml"
    broken.write_text('name = "t"\n[[workers]]\nname = "w"\n', encoding="utf-8")
    assert main(["validate", str(broken), "--app-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("regiment: error: "), err
    assert "workers[0]" in err, err
    assert "Traceback" not in err


def test_argument_errors_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    assert "TEAM_FILE" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "exit codes" in capsys.readouterr().out


def test_python_dash_m_regiment_runs_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "regiment", "validate", REFUND],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "ok, team 'refunds'" in done.stdout
