"""Turning a new SQLite journal file to WAL mode while others open it too.

SQLite waits out a lock held by another connection for up to the busy timeout, except
in a few places where waiting could deadlock: there it answers "database is locked" at
once. Two processes (two services, a CLI run beside a service) opening the same new
journal at the same moment meet one of them, ``PRAGMA journal_mode=WAL``: the first
open failed at once, saying the file stayed locked for the whole busy timeout. So the
switch is tried again, with short growing pauses, until the busy timeout is spent. A
journal already in WAL mode answers at the first try, taking no lock.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ("switch_to_wal",)

_FIRST_PAUSE = 0.001
_LONGEST_PAUSE = 0.05


def switch_to_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """``PRAGMA journal_mode=WAL`` on ``conn``, tried again while the file is locked, for
    up to ``busy_timeout`` seconds; then the last "locked" error is raised. Blocks: call
    it from a worker thread, as the journal's opening is."""
    deadline = time.monotonic() + busy_timeout
    pause = _FIRST_PAUSE
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)
