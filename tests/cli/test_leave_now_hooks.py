"""A second Ctrl-C leaves at once (``os._exit``): no exit hook runs. What one would
have stopped and that outlives the process (a local Ray's agents and workers, which
ran on for a minute) registers with ``at_leave_now``, which runs before the exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import atexit, sys
from regiment._signals import at_leave_now, leave_now

def hook(name):
    def write():
        with open(sys.argv[1], "a") as file:
            file.write(name + "\\n")
    return write

first = hook("first")
at_leave_now(first)
at_leave_now(first)  # once only
at_leave_now(lambda: 1 / 0)  # one that fails does not keep the others from running
at_leave_now(hook("second"))
atexit.register(hook("atexit"))  # not run: leaving at once
leave_now(130)
"""


def test_leave_now_runs_its_hooks_once_each_then_exits_with_the_code(tmp_path: Path) -> None:
    record = tmp_path / "ran.txt"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(record)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 130, done.stderr
    assert record.read_text().splitlines() == ["first", "second"]
    assert done.stderr == ""
