"""What the service's cancel tests on both journals (the ``journal`` fixture, in
conftest.py) share: the one-refund ``PLAN`` they pause on, and another connection holding
the journal's write lock (``hold_write_lock``)."""

from __future__ import annotations

import sqlite3

import psycopg

from tests.hierarchy.approval_team import plan_json, step

__all__ = ("PLAN", "hold_write_lock")

PLAN = plan_json(step("s1", "billing", "refund 2 500"))


def hold_write_lock(journal: str, run_id: str) -> sqlite3.Connection | psycopg.Connection[object]:
    """Another connection holding the journal's write lock (SQLite: the file's; PostgreSQL:
    the run's row) in an open transaction: closing it lets go."""
    if journal.startswith("postgresql://"):
        holder: psycopg.Connection[object] = psycopg.connect(journal, autocommit=True)
        holder.execute(b"BEGIN")
        holder.execute(b"SELECT 1 FROM journal_runs WHERE run_id = %s FOR UPDATE", (run_id,))
        return holder
    lock = sqlite3.connect(journal, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    return lock
