"""``regiment serve`` and ``regiment mcp`` of a team file with Ray workers, SIGTERMed
while the team starts, on a local Ray of their own: a clean stop, exit 0 as without Ray
(README: the first SIGTERM is a clean stop, a second one exits 143). Ray's driver had its
crash reporter in front of the command's SIGTERM handler until the join was done: a
SIGTERM meanwhile printed a stack dump ("*** SIGTERM received ...") and the process
aborted on its way out (-6)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from ._sigterm import running

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

REPO = Path(__file__).resolve().parents[2]
STARTED = "Started a local Ray instance"  # Ray's line as ray.init connects its driver


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_sigterm_while_a_ray_team_starts_is_a_clean_stop(command: str, tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        (REPO / "examples" / "refund" / "team.toml").read_text()
        + '\n[workers.placement]\nkind = "ray"\nnum_cpus = 0\n',
    )
    port = "0"  # a free port the server takes itself (the test never connects to it)
    argv = [sys.executable, "-m", "regiment", command, str(team), "--model", "scripted"]
    argv += ["--port", port] if command == "serve" else ["--http", port]
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    # its own journal: not the repository's .regiment/ (shared by whatever else runs there)
    journal = str(tmp_path / "journal.db")
    env = {**os.environ, "RAY_ADDRESS": "local", "PYTHONPATH": path, "REGIMENT_JOURNAL": journal}
    with subprocess.Popen(
        argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stderr is not None
            said = []
            for line in child.stderr:  # Ray's line, then the seconds its driver connects
                said.append(line)
                if STARTED in line:
                    break
            # Into the seconds its driver connects (the reporter came with it): no line
            # marks them, so this waits; sent sooner or later, a stop must be clean too.
            time.sleep(1)
            ours = psutil.Process(child.pid).children(recursive=True)
            child.send_signal(signal.SIGTERM)
            rest = child.stderr.read()
            child.wait(timeout=120)
        finally:
            child.kill()
    stderr = "".join(said) + rest
    assert STARTED in stderr
    assert child.returncode == 0, stderr[-3000:]
    assert "SIGTERM received" not in stderr
    assert "Traceback" not in stderr
    assert [p.pid for p in ours if running(p)] == []  # its local Ray ended with it
