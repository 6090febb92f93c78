"""What the kill/resume torture (``crash_torture.py``) checks of a run after it.

Each check returns anomalies as ``(kind, detail)`` pairs; none means the promise held.
They read the journal through its public interface and the tools' ledger files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from regiment.journal import Journal
from regiment.journal._records import (
    ModelCallFinished,
    PlanVersion,
    RunCreated,
    RunFinished,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.journal._views import Entry

__all__ = ("Anomaly", "Ledger", "check_journal", "check_ledger", "in_flight")

Anomaly = tuple[str, str]

# Events a run emits once: a second one, for the same key, is a duplicate in the journal.
ONCE_EVENTS = {
    "RunStarted": (),
    "PlanCreated": ("plan",),
    "Replanned": ("new_version",),
    "StepDispatched": ("plan_version", "step_id", "attempt"),
    "StepCompleted": ("plan_version", "step_id"),
    "ApprovalRequested": ("request",),
    "ApprovalResolved": ("request_id",),
    "CheckFailed": ("plan_version", "step_id"),
    "CritiqueCompleted": ("verdict",),
    "RoundStarted": ("round",),
    "RunCompleted": (),
}


class Ledger:
    """The torture team's tool ledger: ``bodies.jsonl`` (every body run) and
    ``effects.jsonl`` (the side effect, once per idempotency key)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def lines(self, name: str) -> list[list[object]]:
        path = self.folder / name
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def effects(self) -> list[tuple[str, str]]:
        """(tool, arguments) of every side effect, sorted: what the world saw."""
        return sorted(
            (str(t), json.dumps(a, sort_keys=True)) for _, t, a, _ in self.lines("effects.jsonl")
        )

    def body_runs(self) -> Counter[str]:
        return Counter(str(line[0]) for line in self.lines("bodies.jsonl"))


def in_flight(entries: Sequence[Entry]) -> set[str]:
    """The idempotency keys of calls with a journaled intent and no result."""
    started: dict[tuple[int, str, int], str] = {}
    done: set[tuple[int, str, int]] = set()
    for entry in entries:
        record = entry.record
        if isinstance(record, ToolCallStarted):
            started[(record.plan_version, record.step_id, record.call_index)] = (
                record.idempotency_key
            )
        elif isinstance(record, ToolCallFinished):
            done.add((record.plan_version, record.step_id, record.call_index))
    return {key for where, key in started.items() if where not in done}


def check_ledger(ledger: Ledger, baseline: Ledger, may_repeat: set[str]) -> list[Anomaly]:
    """Every side effect once per key and the same as the uninterrupted run's; a body
    that ran more than once only for a key that was in flight at a kill."""
    found: list[Anomaly] = []
    keys = [str(line[0]) for line in ledger.lines("effects.jsonl")]
    repeated = sorted(k for k, n in Counter(keys).items() if n > 1)
    if repeated:
        found.append(("effect repeated", f"keys {repeated}"))
    if ledger.effects() != baseline.effects():
        found.append(("effects differ", f"{ledger.effects()} != {baseline.effects()}"))
    again = {k: n for k, n in ledger.body_runs().items() if n > 1 and k not in may_repeat}
    if again:
        found.append(("body ran again, not in flight", f"{again}; in flight: {sorted(may_repeat)}"))
    return found


def _event_key(entry: Entry) -> tuple[str, str] | None:
    record = entry.record
    kind = getattr(record, "kind", None)
    if kind not in ONCE_EVENTS:
        return None
    event = getattr(record, "event", {})
    if kind == "RunCompleted" and event.get("result", {}).get("status") == "paused":
        return None  # each pause ends a process's part of the run with one
    parts = []
    for name in ONCE_EVENTS[kind]:
        value = event.get(name)
        if name == "plan" and isinstance(value, dict):
            value = value.get("version")
        parts.append(json.dumps(value, sort_keys=True))
    return kind, "/".join(parts)


def _counted(entries: Sequence[Entry]) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for entry in entries:
        record = entry.record
        match record:
            case ModelCallFinished():
                counts[("model reply", record.call_key)] += 1
            case PlanVersion():
                counts[("plan version", str(record.version))] += 1
            case ToolCallFinished():
                where = f"v{record.plan_version}/{record.step_id}/{record.call_index}"
                counts[("tool result", where)] += 1
            case StepReported(committed=True):
                counts[("committed step", record.step_id)] += 1
            case RunCreated() | RunFinished():
                counts[(type(record).__name__, "")] += 1
            case _:
                key = _event_key(entry)
                if key is not None:
                    counts[("event " + key[0], key[1])] += 1
    return counts


def committed(entries: Sequence[Entry]) -> list[tuple[int, str]]:
    return sorted(
        (e.record.plan_version, e.record.step_id)
        for e in entries
        if isinstance(e.record, StepReported) and e.record.committed
    )


def check_journal(entries: Sequence[Entry], baseline: Sequence[Entry]) -> list[Anomaly]:
    """Records in order (dense sequence numbers), the run created first and finished
    last, no record or once-only event twice, and the same steps committed as the
    uninterrupted run."""
    found: list[Anomaly] = []
    seqs = [e.seq for e in entries]
    if seqs != list(range(1, len(seqs) + 1)):
        found.append(("journal out of order", f"sequence numbers {seqs[:5]}..."))
    if not entries or not isinstance(entries[0].record, RunCreated):
        found.append(("journal out of order", "the first record is not RunCreated"))
    if not entries or not isinstance(entries[-1].record, RunFinished):
        found.append(("journal out of order", "the last record is not RunFinished"))
    twice = sorted(f"{k[0]} {k[1]} x{n}" for k, n in _counted(entries).items() if n > 1)
    if twice:
        found.append(("journal duplicate", "; ".join(twice)))
    if committed(entries) != committed(baseline):
        found.append(("steps lost or added", f"{committed(entries)} != {committed(baseline)}"))
    return found


async def read_run(journal: Journal, run_id: str) -> tuple[Entry, ...]:
    return await journal.read(run_id)
