"""A run whose ``regiment run`` was SIGKILLed resumes at once on the same machine.

Real ``python -m regiment`` processes on a real SQLite journal: the run is stopped in
its step's model call, ``regiment resume RUN_ID`` is refused while that process still
runs (its lease is alive), and once it is killed, it lists as ``stalled`` at once
(``regiment runs``, ``GET /runs``), and ``regiment resume RUN_ID`` and a restarted
``regiment serve`` (``POST /runs/{id}/resume``) finish the run without waiting out the
dead owner's 30 s lease.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import regiment_process, write_team

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # serve's --app-dir is put on it


def _crashed(tmp_path: Path) -> tuple[Path, str]:
    """The team file and the run id of a run whose ``regiment run`` was SIGKILLed in its
    step, after ``regiment resume`` was refused while that process still ran."""
    team = write_team(tmp_path, "stuck_while_told")
    (tmp_path / "stuck").touch()
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--journal", "runs.db"]
    environ = {k: v for k, v in os.environ.items() if k != "REGIMENT_JOURNAL"}
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=environ,
    ) as child:
        assert child.stderr is not None
        seen = [child.stderr.readline()]
        while seen[-1] and "-> s1" not in seen[-1]:  # the step is running
            seen.append(child.stderr.readline())
        assert seen[-1], f"the run ended early: {''.join(seen)}"
        listed = regiment_process("runs", "--json", "--journal", "runs.db", cwd=tmp_path)
        (row,) = [json.loads(x) for x in listed.stdout.splitlines()]
        live = regiment_process("resume", row["run_id"], "--journal", "runs.db", cwd=tmp_path)
        assert (live.returncode, row["status"]) == (2, "running"), live.stderr
        assert f"owned by process {child.pid} on this machine" in live.stderr
        assert "which still runs: wait for it to finish, or stop it" in live.stderr
        child.kill()
        child.stderr.read()
    assert child.returncode == -9
    (tmp_path / "stuck").unlink()
    return team, str(row["run_id"])


def test_regiment_resume_takes_over_a_killed_runs_lease_at_once(tmp_path: Path) -> None:
    _, run_id = _crashed(tmp_path)
    # Listed as what resume does with it: stalled at once, not running for 30 s more.
    listed = regiment_process("runs", "--json", "--journal", "runs.db", cwd=tmp_path)
    assert json.loads(listed.stdout)["status"] == "stalled"
    resumed = regiment_process("resume", run_id, "--journal", "runs.db", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "waited" in resumed.stdout
    shown = regiment_process("runs", "--json", "--journal", "runs.db", cwd=tmp_path)
    assert json.loads(shown.stdout)["status"] == "completed"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn serves on asyncio only
async def test_a_restarted_service_resumes_a_killed_run_at_once(tmp_path: Path) -> None:
    from tests.serve.cli_serving import serve_and_ask

    team, run_id = _crashed(tmp_path)
    flags = ["--journal", str(tmp_path / "runs.db"), "--app-dir", str(tmp_path)]
    asked = [("GET", "/runs?status=stalled"), ("POST", f"/runs/{run_id}/resume?wait=true")]
    listed, answer = await serve_and_ask(flags, asked, team=str(team))
    assert [(r["run_id"], r["status"]) for r in listed.json()["runs"]] == [(run_id, "stalled")]
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "completed"
