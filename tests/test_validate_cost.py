"""``regiment validate`` loads what checking a team file needs and nothing of a run (issue #22).

Validate reads the file, imports its tools and builds the team with a stand-in
model. The CLI module it goes through also serves ``approve`` and ``runs``; what
those need (the engine's approval path, the journal's backends) and what only a
nested team file needs (the nested-team worker and the run channel it drives) load
when used; ``--help`` and ``runs`` read no team file and load neither the config room
nor a team's classes. Each check runs in a fresh interpreter, as in
``test_import_cost.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fresh_interpreter import modules_after

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Modules of a run, of a journal's backends and of a nested team: not for validating a flat team.
NOT_FOR_VALIDATE = (
    "regiment.hierarchy._approving",
    "regiment.hierarchy._running",
    "regiment.hierarchy.run._journaling",
    "regiment.hierarchy.run._changes",
    "regiment.hierarchy.run._phase",
    "regiment.hierarchy.run._channel",
    "regiment.hierarchy.workers._team_worker",
    "regiment.journal._open",
    "regiment.journal._memory",
    "regiment.journal._buffered",
    "anyio.streams.memory",
)

# A worker's step machinery: it loads as a team starts, not with `Worker` (perf20).
STEP_MACHINERY = (
    "regiment.actors",
    "regiment.hierarchy.workers._worker_actor",
    "regiment.hierarchy.workers._step_actor",
    "regiment.hierarchy.workers._loop",
    "regiment.hierarchy.workers._step_jobs",
    "regiment.hierarchy.workers._grace",
    "regiment.hierarchy.workers._journal_calls",
    "regiment.hierarchy.workers._approval_gate",
    "regiment.hierarchy.guard._step",
    "regiment.hierarchy.guard._chain",
    "regiment.hierarchy._replay",
    "regiment.hierarchy._model_call",
)

# What only a command that reads a team file needs: not `--help`, `runs` or `show`.
NO_TEAM_FILE = (
    "regiment.config",
    "regiment.hierarchy._team",
    "regiment.hierarchy.workers._worker",
    "regiment.actors",
)


def _validated(team_file: Path) -> tuple[set[str], str]:
    """The modules loaded by ``regiment validate team_file``, and what it printed."""
    program = (
        "from regiment.cli import main\n"
        f"code = main(['validate', {str(team_file)!r}])\n"
        "assert code == 0, code\n"
    )
    return modules_after(program, cwd=EXAMPLES.parent)


def test_validate_loads_no_run_journal_backend_or_nested_worker() -> None:
    loaded, said = _validated(EXAMPLES / "refund" / "team.toml")
    assert "ok, team 'refunds'" in said
    # It did build the team (its workers, their tools): the cuts are not a skipped check.
    assert {"regiment.hierarchy._team", "regiment.hierarchy.workers._worker"} <= loaded
    assert [m for m in NOT_FOR_VALIDATE if m in loaded] == []
    assert [m for m in STEP_MACHINERY if m in loaded] == []


def test_importing_team_and_worker_loads_no_step_machinery_until_a_team_starts() -> None:
    program = (
        "import json, sys, anyio\n"
        "from regiment import Planner, Team, Worker, ScriptedModel\n"
        "before = sorted(sys.modules)\n"
        'brain = ScriptedModel([\'{"steps": [{"id": "s1", "worker": "w", '
        "\"instruction\": \"go\"}]}', 'done', 'final'])\n"
        "team = Team(name='t', planner=Planner(model=brain), workers=[Worker(name='w', "
        "description='does it', model=brain)])\n"
        "made = sorted(sys.modules)\n"
        "result = anyio.run(team.run, 'goal')\n"
        "print(json.dumps([before, made, sorted(sys.modules), result.status]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    before, made, ran, status = json.loads(done.stdout.splitlines()[-1])
    assert [m for m in STEP_MACHINERY if m in before or m in made] == []
    assert status == "completed"  # and a run loads it all, once the team starts
    assert [m for m in STEP_MACHINERY if m not in ran] == []


def test_validate_of_a_nested_team_file_builds_its_team_worker(tmp_path: Path) -> None:
    child = tmp_path / "research.toml"
    child.write_text(
        'name = "research"\nmodel = "scripted"\n'
        'brain = "examples.refund.brain:refund_brain"\n\n'
        '[[workers]]\nname = "finder"\ndescription = "Finds facts."\n'
    )
    parent = tmp_path / "parent.toml"
    parent.write_text(
        'name = "top"\nmodel = "scripted"\nbrain = "examples.refund.brain:refund_brain"\n\n'
        '[[workers]]\nname = "research"\ndescription = "Researches."\nteam = "research.toml"\n'
    )
    loaded, said = _validated(parent)
    assert "ok, team 'top'" in said
    assert "worker research: team file research.toml" in said
    assert "regiment.hierarchy.workers._team_worker" in loaded
    # Still no run of it: the nested team is built, not started.
    assert [
        m for m in ("regiment.hierarchy._running", "regiment.journal._open") if m in loaded
    ] == []


def test_the_cli_parser_alone_loads_no_approval_engine_or_journal_backend() -> None:
    """``regiment --help`` (the parser of every command, approvals' too)."""
    loaded, _ = modules_after("from regiment.cli import main\nassert main(['--help']) == 0\n")
    assert "regiment.cli._approvals" in loaded
    assert [m for m in NOT_FOR_VALIDATE if m in loaded] == []
    assert [m for m in NO_TEAM_FILE if m in loaded] == []


def test_validate_of_a_team_without_tools_loads_no_pydantic(tmp_path: Path) -> None:
    # pydantic builds the argument schemas of tools and checks output types: a file
    # with neither does not load it.
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "t"\nmodel = "scripted"\nbrain = "examples.refund.brain:refund_brain"\n\n'
        '[[workers]]\nname = "billing"\ndescription = "Checks refunds."\n'
    )
    loaded, said = _validated(team)
    assert "ok, team 't'" in said
    assert "regiment.config._imports" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")) == []
    # Nor does anything scan the installed packages' entry points (pydantic's plugins,
    # OpenTelemetry's providers): validate sets no telemetry up.
    assert "importlib.metadata" not in loaded
    assert [m for m in loaded if m.startswith("opentelemetry.sdk")] == []


def test_validate_still_checks_an_output_type_with_pydantic(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "t"\nmodel = "scripted"\nbrain = "examples.refund.brain:refund_brain"\n'
        'output_type = "pathlib:Path"\n\n'
        '[[workers]]\nname = "billing"\ndescription = "Checks refunds."\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "regiment", "validate", str(team)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=EXAMPLES.parent,
    )
    assert done.returncode == 2, done.stdout
    assert "expected a pydantic model class" in done.stderr


def test_listing_runs_loads_no_pydantic(tmp_path: Path) -> None:
    program = (
        "import json, sys\n"
        "from regiment.cli import main\n"
        f"code = main(['runs', '--journal', {str(tmp_path / 'none.db')!r}])\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert code == 2  # no journal there: it says so (and has read no team file)
    assert "no journal there" in done.stderr
    assert [m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")] == []
    assert [m for m in NO_TEAM_FILE if m in loaded] == []
