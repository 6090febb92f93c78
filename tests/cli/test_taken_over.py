"""``regiment run`` frozen (SIGSTOP) while another process takes its run over: woken up
(SIGCONT), it learns so at its next heartbeat, and its last line says who runs the run
now, as ``run()``'s error and ``stream()``'s last event do.

Its last line was the journal's raw refusal ("run failed: LeaseLost: run '...': '...'
wrote with fencing token 1, but '...' took the run over (token 2); this process must
stop working on it"): the run's own end said it well, but the command's journal, closed
after it, raised the refusal of the writes the run had buffered while frozen again.
Then it said "run failed: JournalError: ..." and exited 1, though the run had not
failed: it goes on in the other process. Now it exits 4, its last line says so.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.journal.test_lease_lost import take_over

from .helpers import read_until, write_team

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals need POSIX")


def test_regiment_run_says_its_run_was_taken_over_and_by_whom(tmp_path: Path) -> None:
    team = write_team(tmp_path, "stuck")
    journal = str(tmp_path / "runs.db")
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--journal", journal, "--plain"]
    with subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        seen: list[str] = []
        read_until(child, "-> s1", seen)  # the step waits for ever
        os.kill(child.pid, signal.SIGSTOP)
        try:
            run_id = anyio.run(take_over, journal)
        finally:
            os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=50)  # its heartbeat comes within 10 s
    assert child.returncode == 4, err  # not a failure: the run goes on elsewhere
    assert out == ""  # no answer
    last = err.splitlines()[-1]
    assert last.startswith(
        f"regiment: run goes on elsewhere: run {run_id} was taken over by another "
        "process, pid 4242 on elsewhere (elsewhere:4242:1), which runs it now"
    ), err
    # the command it suggests reads the run's journal (typed here, it read the default one)
    flag = f"--journal {shlex.quote(journal)}"
    assert f"the new owner finishes it (`regiment show {flag} {run_id}` shows it; " in last
    assert "Traceback" not in err
