"""A program with Ray workers, SIGTERMed mid-step: its exit, what it printed, and which of
the Ray processes it had started still run afterwards (tests/ray/test_ray_join.py and
test_ray_team_file.py)."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = ("Stopped", "running", "sigterm_mid_step")


@dataclass(frozen=True)
class Stopped:
    """A SIGTERMed program: its exit code, its stderr, the names of the processes it had
    started (seen mid-step), and those of them still running once it exited."""

    returncode: int
    stderr: str
    started: frozenset[str]
    left: list[str]


def running(process: int | psutil.Process) -> bool:
    """Whether ``process`` (a pid, or one seen running: not a later one with its pid)
    runs: an orphan's zombie, not reaped yet, has ended."""
    try:
        found = psutil.Process(process) if isinstance(process, int) else process
        return found.is_running() and found.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def sigterm_mid_step(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    ledger: Path,
    sent: signal.Signals = signal.SIGTERM,
    settle: float = 0.0,
) -> Stopped:
    """Start ``argv``, wait until its step has performed its effect (``ledger`` says
    "performed"), note its descendant processes, send it ``sent`` and wait for its exit;
    then up to ``settle`` seconds more for the processes it had started to end."""
    child = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not (ledger.exists() and "performed" in ledger.read_text()):  # mid-step
            assert child.poll() is None, child.communicate()[1][-3000:]
            time.sleep(0.1)
        ours = {p: p.name() for p in psutil.Process(child.pid).children(recursive=True)}
        child.send_signal(sent)
        _, stderr = child.communicate(timeout=120)
    finally:
        child.kill()
    deadline = time.monotonic() + settle
    while any(running(p) for p in ours) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [name for p, name in ours.items() if running(p)]
    return Stopped(child.returncode, stderr, frozenset(ours.values()), left)
