"""Ctrl-C (or SIGTERM) while ``regiment approve`` waits for a lock on the journal that
another program holds (a ``sqlite3`` shell's open transaction, a migration, a ``LOCK
TABLE``).

It watched no signal: Python's own handling cancelled the command's task, which cannot stop
a statement that waits in a thread, so on an SQLite journal the command waited on (its
``busy_timeout``, 30 s) and only then said ``regiment: interrupted``, not whether the
decision was recorded. Now ``approve``, ``approvals``, ``runs``, ``show`` and ``resume
RUN_ID``'s look-up leave at once (130, 143 for a SIGTERM), as a second Ctrl-C of ``regiment
run`` does: nothing of theirs needs winding down, and a decision is one transaction,
recorded whole or not at all; ``approve`` says how to see which.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _regiment(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "regiment", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def _paused_run(journal: str) -> tuple[str, str]:
    """A run paused for approval in ``journal``: its id and its request's."""
    paused = _regiment("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    assert paused.returncode == 3, paused.stderr
    (request,) = _pending(journal)
    return request["run_id"], request["request_id"]


def _pending(journal: str) -> list[dict[str, str]]:
    listed = _regiment("approvals", "--json", "--journal", journal)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


@contextmanager
def _sqlite_locked(journal: str) -> Iterator[None]:
    """Another program's write transaction on the SQLite journal."""
    holder = sqlite3.connect(journal, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.close()


def _until_busy_waiting(pid: int) -> None:
    """Return once a thread of process ``pid`` other than its main one sleeps in the kernel's
    timed sleep: SQLite's busy handler, which sleeps between tries at a locked file (the
    command's other threads wait on futexes, its main one in epoll)."""
    tasks = Path(f"/proc/{pid}/task")
    while not any(
        task.name != str(pid) and _wchan(task) == "hrtimer_nanosleep" for task in tasks.iterdir()
    ):
        time.sleep(0.05)


def _wchan(task: Path) -> str:
    try:
        return (task / "wchan").read_text()
    except OSError:  # the thread ended meanwhile
        return ""


@contextmanager
def _postgres_locked(url: str) -> Iterator[None]:
    """Another program's transaction holding the journal's tables; returns once a session
    of the command waits for it."""
    holder = psycopg.connect(url)
    try:
        holder.execute(b"LOCK TABLE journal_runs, journal_records IN ACCESS EXCLUSIVE MODE")
        yield
    finally:
        holder.close()


def _until_lock_waiting(url: str) -> None:
    query = b"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
    with psycopg.connect(url, autocommit=True) as watcher:
        while (watcher.execute(query).fetchone() or (0,))[0] == 0:
            time.sleep(0.05)


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_approve_on_a_locked_sqlite_journal_leaves_at_once(
    tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, request_id = _paused_run(journal)
    with _sqlite_locked(journal):
        child = _approving(run_id, request_id, journal)
        try:
            _until_busy_waiting(child.pid)
            child.send_signal(sent)
            _, err = child.communicate(timeout=60)
        finally:
            child.kill()
        assert child.returncode == code, err
    _said_how_to_check(err, run_id, journal)
    assert [r["request_id"] for r in _pending(journal)] == [request_id]  # nothing recorded


def test_approve_on_a_locked_postgresql_journal_leaves_at_once(postgres_url: str) -> None:
    url = f"{postgres_url}%20-clock_timeout%3D0"  # the role's, say: wait for a lock for ever
    run_id, request_id = _paused_run(url)
    with _postgres_locked(url):
        child = _approving(run_id, request_id, url)
        try:
            _until_lock_waiting(url)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=60)
        finally:
            child.kill()
        assert child.returncode == 130, err
    _said_how_to_check(err, run_id, url)
    assert [r["request_id"] for r in _pending(url)] == [request_id]


def _approving(run_id: str, request_id: str, journal: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "regiment", "approve", run_id, request_id, "--journal", journal],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _said_how_to_check(err: str, run_id: str, journal: str) -> None:
    assert err.strip().splitlines()[-1] == (
        "regiment: interrupted; the decision was not recorded, or recorded whole: "
        f"`regiment approvals --journal {shlex.quote(journal)} {run_id}` lists the request "
        "while it waits"
    )
    assert "Traceback" not in err


_WAITING = b"SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"


def _new_lock_waiter(url: str, before: set[int]) -> set[int]:
    """Return, once a session not in ``before`` waits for a lock, the ones waiting (a
    killed command's session waits on: the server notices its client left only then)."""
    with psycopg.connect(url, autocommit=True) as watcher:
        while True:
            waiting = {row[0] for row in watcher.execute(_WAITING).fetchall()}
            if waiting - before:
                return waiting
            time.sleep(0.05)


def test_a_read_on_a_locked_postgresql_journal_leaves_at_once(postgres_url: str) -> None:
    # Their --help lists 130 and 143 (tests/cli/test_help_exits.py): here each is reached.
    url = f"{postgres_url}%20-clock_timeout%3D0"
    run_id, _ = _paused_run(url)
    reads = {"runs": [], "show": [run_id], "approvals": [run_id]}
    waiting: set[int] = set()
    with _postgres_locked(url):
        for command, more in reads.items():
            for sent, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
                argv = [sys.executable, "-m", "regiment", command, *more, "--journal", url]
                with subprocess.Popen(
                    argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
                ) as child:
                    try:
                        waiting = _new_lock_waiter(url, waiting)
                        child.send_signal(sent)
                        out, err = child.communicate(timeout=60)
                    finally:
                        child.kill()
                assert (command, child.returncode) == (command, code), err
                assert err.splitlines()[-1] == "regiment: interrupted", err
                assert out == ""
