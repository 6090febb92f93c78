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

__all__ = ("Anomaly", "Ledger", "check_journal", "check_ledger", "journaled_calls", "reruns")

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

    def body_runs(self) -> dict[str, list[int]]:
        """The pids that ran each key's body, in the order they ran it."""
        runs: dict[str, list[int]] = {}
        for line in self.lines("bodies.jsonl"):
            runs.setdefault(str(line[0]), []).append(int(str(line[3])))
        return runs

    def kills(self) -> dict[int, float]:
        """The pids the torture SIGKILLed, each with a time it was dead by."""
        return {int(str(pid)): float(str(at)) for pid, at in self.lines("kills.jsonl")}


def journaled_calls(entries: Sequence[Entry]) -> dict[str, float | None]:
    """Each journaled intent's idempotency key, with when its result was recorded
    (None: no result)."""
    keys: dict[tuple[int, str, int], str] = {}
    results: dict[tuple[int, str, int], float] = {}
    for entry in entries:
        record = entry.record
        if isinstance(record, ToolCallStarted | ToolCallFinished):
            where = (record.plan_version, record.step_id, record.call_index)
            if isinstance(record, ToolCallStarted):
                keys[where] = record.idempotency_key
            else:
                results.setdefault(where, entry.recorded_at.timestamp())
    return {key: results.get(where) for where, key in keys.items()}


def reruns(key: str, pids: list[int], kills: dict[int, float], done: float | None) -> list[str]:
    """Why ``key``'s body runs by ``pids`` break the promise: a body runs again only in
    another process, after the one before it was killed, before its result was journaled."""
    why = []
    if len(set(pids)) < len(pids):
        why.append(f"{key}: twice in one process ({pids})")
    for pid in pids[:-1]:
        if pid not in kills:
            why.append(f"{key}: again after pid {pid}, which was not killed ({pids})")
        elif done is not None and done < kills[pid]:
            why.append(f"{key}: again after pid {pid} had journaled its result ({pids})")
    return why


def check_ledger(
    ledger: Ledger,
    baseline: Ledger,
    entries: Sequence[Entry],
    nested: Sequence[Sequence[Entry]] = (),
) -> list[Anomaly]:
    """Every side effect once per key and the same as the uninterrupted run's; every
    body run under a journaled intent whose result is journaled; a body that ran more
    than once only in another process after a kill of the one before, the call's result
    not yet journaled then (read from the final journal, the ledger and the kills; the
    calls of the ``nested`` runs' records too)."""
    found: list[Anomaly] = []
    keys = [str(line[0]) for line in ledger.lines("effects.jsonl")]
    repeated = sorted(k for k, n in Counter(keys).items() if n > 1)
    if repeated:
        found.append(("effect repeated", f"keys {repeated}"))
    if ledger.effects() != baseline.effects():
        found.append(("effects differ", f"{ledger.effects()} != {baseline.effects()}"))
    calls, kills = journaled_calls(entries), ledger.kills()
    for records in nested:
        calls.update(journaled_calls(records))
    runs = ledger.body_runs()
    if missing := sorted(set(runs) - set(calls)):
        found.append(("body ran with no journaled intent", f"keys {missing}"))
    if open_calls := sorted(k for k, done in calls.items() if done is None):
        found.append(("call left without a result", f"keys {open_calls}"))
    again = [w for key, pids in runs.items() for w in reruns(key, pids, kills, calls.get(key))]
    if again:
        found.append(("body ran again, not after a kill in flight", "; ".join(again)))
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
