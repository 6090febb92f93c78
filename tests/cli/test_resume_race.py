"""Two ``regiment resume RUN_ID`` at once: the one that finds the run finished by the
other, after its own check, says so as that check does (exit 2, "has already
finished"), not "run failed: JournalError: ... has already finished" with exit 1.

The race is made real: the team's tool module, imported by the first resume after its
check and before it takes the run, runs the second resume to its end.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .helpers import regiment_process

REPO = Path(__file__).resolve().parents[2]
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."

_RACER = """
import os, subprocess, sys

from examples.refund.tools import email_customer

run_id = os.environ.pop("RACE_RUN", None)
if run_id is not None:  # the first resume, between its check and its lease: the other one
    other = subprocess.run(
        [sys.executable, "-m", "regiment", "resume", run_id, "--journal", os.environ["J"]],
        capture_output=True, text=True, check=False,
    )
    assert other.returncode == 0, other.stderr
"""


def test_a_resume_beaten_by_another_says_the_run_has_finished(tmp_path: Path) -> None:
    source = (REPO / "examples" / "refund" / "team_approval.toml").read_text(encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        source.replace('"examples.refund.tools:email_customer"', '"racer:email_customer"'),
        encoding="utf-8",
    )
    (tmp_path / "racer.py").write_text(_RACER, encoding="utf-8")
    journal = str(tmp_path / "runs.db")
    env = {"J": journal, "PYTHONPATH": os.pathsep.join((str(REPO.parent), str(REPO)))}
    ran = regiment_process(
        "run", str(team), GOAL, "--model", "scripted", "--journal", journal, cwd=tmp_path, env=env
    )
    assert ran.returncode == 3, ran.stderr
    listed = regiment_process("approvals", "--json", "--journal", journal, cwd=tmp_path, env=env)
    (request,) = map(json.loads, listed.stdout.splitlines())
    run_id = request["run_id"]
    decided = regiment_process(
        "approve", run_id, request["request_id"], "--journal", journal, cwd=tmp_path, env=env
    )
    assert decided.returncode == 0, decided.stderr
    beaten = regiment_process(
        "resume", run_id, "--journal", journal, cwd=tmp_path, env={**env, "RACE_RUN": run_id}
    )
    assert beaten.returncode == 2, beaten.stderr
    assert beaten.stdout == ""
    assert beaten.stderr.splitlines()[-1] == (
        f"regiment: error: run {run_id!r} has already finished (completed); "
        f"`regiment show --journal {journal} {run_id}` shows it"
    )
    assert "Traceback" not in beaten.stderr
