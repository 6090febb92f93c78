"""A version-1 journal written by hand, as regiment's first schema laid it out.

Version 1 had no sessions and no approvals: ``journal_runs`` lacked the
``session`` and ``pending_approvals`` columns. The migration tests build one of
these and open it with today's code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from .records import created, event

V1_TABLES = (
    "CREATE TABLE journal_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO journal_meta (name, value) VALUES ('format', 'regiment.journal')",
    "INSERT INTO journal_meta (name, value) VALUES ('schema_version', '1')",
    "CREATE TABLE journal_runs ("
    " run_id TEXT PRIMARY KEY, team TEXT NOT NULL, goal TEXT NOT NULL,"
    " config_hash TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL,"
    " updated_at DOUBLE PRECISION NOT NULL, final_status TEXT, owner TEXT,"
    " token INTEGER NOT NULL, lease_expires_at DOUBLE PRECISION NOT NULL,"
    " last_seq INTEGER NOT NULL)",
    "CREATE TABLE journal_records ("
    " run_id TEXT NOT NULL REFERENCES journal_runs (run_id), seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL, key TEXT, recorded_at DOUBLE PRECISION NOT NULL,"
    " body {blob} NOT NULL, PRIMARY KEY (run_id, seq))",
    "CREATE INDEX journal_records_key ON journal_records (run_id, key) WHERE key IS NOT NULL",
    "CREATE INDEX journal_runs_started ON journal_runs (started_at)",
)

RUN_ID = "run-v1"


def write_v1(execute: Callable[[str, Sequence[object]], object], *, blob: str, mark: str) -> None:
    """One stalled run with two records, in the version-1 layout (``mark``: ``?`` or ``%s``)."""
    for statement in V1_TABLES:
        execute(statement.format(blob=blob), ())
    first = created(RUN_ID)
    started = first.created_at.timestamp()
    execute(
        "INSERT INTO journal_runs (run_id, team, goal, config_hash, started_at, updated_at,"
        " owner, token, lease_expires_at, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)".replace(
            "?", mark
        ),
        (
            RUN_ID,
            first.team,
            first.goal,
            first.config_hash,
            started,
            started,
            "old",
            1,
            started + 30,
            2,
        ),
    )
    for seq, record in ((1, first), (2, event(RUN_ID, 0))):
        execute(
            "INSERT INTO journal_records (run_id, seq, kind, key, recorded_at, body)"
            " VALUES (?, ?, ?, NULL, ?, ?)".replace("?", mark),
            (RUN_ID, seq, type(record).__struct_config__.tag, started, msgspec.json.encode(record)),
        )
