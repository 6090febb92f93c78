"""SIGTERM (what a service manager, ``kill`` or ``timeout`` sends): the run stops as for
Ctrl-C, and the command exits 143 (128 + 15), as a terminated process does."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import WAITING, read_until, write_napping_team, write_team

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals to a child need POSIX")


def _running(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigterm_cancels_the_run_and_exits_143(tmp_path: Path, backend: str) -> None:
    # It exited 130, the code of Ctrl-C, as if the user had pressed it.
    team = write_team(tmp_path, "stuck")
    argv = ["run", str(team), "wait", "--app-dir", str(tmp_path), "--plain"]
    with _running([*argv, "--journal", str(tmp_path / "runs.db"), "--backend", backend]) as child:
        seen: list[str] = []
        read_until(child, "-> s1", seen)
        child.send_signal(signal.SIGTERM)
        assert child.stderr is not None
        rest = child.stderr.read()
        assert child.wait(timeout=30) == 143
    last = rest.strip().splitlines()[-1]
    assert last.startswith("regiment: interrupted; cancelled the run after "), rest
    assert "was running s1 (waiter)" in last
    assert "Traceback" not in rest


@pytest.mark.parametrize(
    ("first", "second", "code"),
    [(signal.SIGINT, signal.SIGTERM, 143), (signal.SIGTERM, signal.SIGINT, 130)],
    ids=["int-then-term", "term-then-int"],
)
def test_a_forced_exit_has_the_code_of_the_signal_that_forced_it(
    tmp_path: Path, first: signal.Signals, second: signal.Signals, code: int
) -> None:
    # A second SIGTERM exited 130 whatever it was.
    team = write_napping_team(tmp_path, "doze")
    argv = ["run", str(team), "nap", "--app-dir", str(tmp_path), "--no-journal", "--plain"]
    with _running(argv) as child:
        seen: list[str] = []
        read_until(child, "napping", seen)
        child.send_signal(first)
        read_until(child, WAITING["doze"], seen)
        child.send_signal(second)
        assert child.stderr is not None
        rest = child.stderr.read()
        assert child.wait(timeout=30) == code
    assert "exiting without waiting for it to wind down" in rest
