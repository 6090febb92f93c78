"""Kill -9 journaled ``regiment run`` processes at random moments, resume them, check.

``python bench/crash_torture.py [--trials 20] [--kills 4] [--backends sqlite,postgres]
[--scenarios plain,approvals] [--seed 1] [--jitter 0.01]`` runs the team of
``bench/torture/team.toml`` (two plan versions, a replan, parallel steps, a critique
round, tools with side effects in files outside the journal) as ``regiment run``
subprocesses, SIGKILLs each at a random moment after its first event, resumes it with
``regiment resume`` (killed at random too, up to ``--kills`` times), and then checks that
the run completed with the uninterrupted run's answer, committed the same steps, did
every side effect once per idempotency key (a body ran twice only for a call in flight
at a kill), and that its journal reads in order with no record twice. ``approvals``
runs ``team_approval.toml``, whose omni charge waits for a decision: the paused run is
approved by ``regiment approve`` in another process racing a ``regiment resume``.
It prints the counts: kills, resumes, outcomes, where the kills landed, anomalies by kind.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from crash_checks import Anomaly, Ledger, check_journal, check_ledger, in_flight

from regiment.journal import open_journal
from regiment.journal._records import EventRecorded, ModelCallFinished, RunFinished
from regiment.journal._views import Entry

__all__ = ("Scenario", "Tally", "Trial", "baseline", "torture")

HERE = Path(__file__).resolve().parent / "torture"
GOAL = "settle the accounts"
TEAMS = {"plain": HERE / "team.toml", "approvals": HERE / "team_approval.toml"}


@dataclass
class Tally:
    """What the torture did and found."""

    kills: int = 0
    resumes: int = 0
    approves: int = 0
    trials: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    anomalies: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)

    def anomaly(self, found: list[Anomaly], where: str) -> None:
        for kind, detail in found:
            self.anomalies[kind] += 1
            self.details.append(f"{where}: {kind}: {detail}")


@dataclass(frozen=True)
class Scenario:
    """One team file on one journal (a fresh SQLite file or PostgreSQL schema per trial)."""

    name: str
    journal: str
    folder: Path
    jitter: float = 0.004
    loop: str = "asyncio"  # the children's anyio backend

    @property
    def team(self) -> Path:
        return TEAMS[self.name]

    def env(self) -> dict[str, str]:
        env = dict(os.environ, TORTURE_LEDGER=str(self.folder), TORTURE_JITTER=str(self.jitter))
        env["REGIMENT_JOURNAL"] = self.journal
        return env


def regiment(*args: str) -> list[str]:
    return [sys.executable, "-m", "regiment", *args]


class Child:
    """A ``regiment`` subprocess writing its events to a file (the handshake: its first line)."""

    def __init__(self, scenario: Scenario, name: str, *args: str, events: bool = True) -> None:
        self.log = scenario.folder / f"{name}.log"
        self.events = scenario.folder / f"{name}.events"
        extra = ["--events", "jsonl", "--events-file", str(self.events)] if events else []
        if args[0] in ("run", "resume"):
            extra += ["--backend", scenario.loop]
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                regiment(*args, *extra),
                env=scenario.env(),
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )

    def first_event(self, timeout: float = 60) -> str | None:
        """The first event line, or None if the process ended before writing one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.events.exists():
                text = self.events.read_text()
                if "\n" in text:
                    return text.split("\n", 1)[0]
            if self.process.poll() is not None:
                return None
            time.sleep(0.003)
        raise TimeoutError(f"no event from {self.process.args!r} in {timeout} s: {self.tail()}")

    def kill_after(self, delay: float) -> int:
        """SIGKILL after ``delay`` s unless it ended first; its exit code (-9: killed)."""
        try:
            return self.process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def wait(self, timeout: float = 120) -> int:
        return self.process.wait(timeout=timeout)

    def tail(self) -> str:
        lines = self.log.read_text().strip().splitlines() if self.log.exists() else []
        return lines[-1] if lines else ""


async def _read(journal_url: str, run_id: str | None) -> tuple[str, tuple[Entry, ...], str]:
    """The run (the journal's only one when ``run_id`` is None): id, records, status."""
    journal = await open_journal(journal_url)
    try:
        if run_id is None:
            run_id = (await journal.list_runs())[0].run_id
        return run_id, await journal.read(run_id), (await journal.get_run(run_id)).status
    finally:
        await journal.close()


async def _pending(journal_url: str, run_id: str) -> list[str]:
    journal = await open_journal(journal_url)
    try:
        return [p.approval_id for p in await journal.pending_approvals(run_id)]
    finally:
        await journal.close()


def read_run(journal_url: str, run_id: str | None = None) -> tuple[str, tuple[Entry, ...], str]:
    return anyio.run(_read, journal_url, run_id)


def _phase(entries: tuple[Entry, ...]) -> str:
    """Where a kill landed: the last event journaled before it, and the last record (a
    model reply: what it answered, ``replan``, ``critique``, ``synthesis``...)."""
    last_event, last = "nothing", "nothing"
    for entry in entries:
        record = entry.record
        if isinstance(record, EventRecorded):
            last_event, last = record.kind, "event"
        elif isinstance(record, ModelCallFinished):
            last = "reply " + record.call_key.split("/")[0]
        else:
            last = type(record).__name__
    return f"after {last_event}, {last}"


def answer_of(entries: tuple[Entry, ...]) -> str | None:
    ends = [e.record for e in entries if isinstance(e.record, RunFinished)]
    return ends[-1].answer if ends else None


@dataclass(frozen=True)
class Baseline:
    answer: str | None
    entries: tuple[Entry, ...]
    ledger: Ledger
    seconds: float


def baseline(scenario: Scenario) -> Baseline:
    """The uninterrupted run (for ``approvals``: paused, approved, resumed once); its
    ``seconds``: from its first record to its last (to its pause, for ``approvals``)."""
    scenario.folder.mkdir(parents=True, exist_ok=True)
    child = Child(scenario, "baseline", "run", str(scenario.team), GOAL, "--app-dir", str(HERE))
    code = child.wait()
    run_id, entries, _ = read_run(scenario.journal)
    seconds = (entries[-1].recorded_at - entries[0].recorded_at).total_seconds()
    if code == 3:
        for approval in anyio.run(_pending, scenario.journal, run_id):
            Child(scenario, "approve", "approve", run_id, approval, events=False).wait()
        code = Child(scenario, "resume", "resume", run_id).wait()
        run_id, entries, _ = read_run(scenario.journal, run_id)
    assert code == 0, f"the uninterrupted run exited {code}: {child.tail()}"
    return Baseline(answer_of(entries), entries, Ledger(scenario.folder), seconds)


def _category(code: int, child: Child) -> str:
    """An exit code and the gist of the last line (ids and numbers left out)."""
    tail = child.tail()
    words = " ".join(w for w in tail.split()[:7] if not any(c.isdigit() for c in w))
    return f"{code}" + (f" {words}" if code not in (0, 3, -9) else "")


@dataclass
class Trial:
    """One run killed and resumed until it completes, then checked."""

    scenario: Scenario
    base: Baseline
    tally: Tally
    rng: random.Random
    kills: int
    reach: float = 1.2  # kills land within this many lengths of the uninterrupted run
    run_id: str | None = None
    may_repeat: set[str] = field(default_factory=set)
    count: int = 0

    def _child(self, what: str, *args: str, events: bool = True) -> Child:
        self.count += 1
        return Child(self.scenario, f"{what}{self.count}", what, *args, events=events)

    def _maybe_kill(self, child: Child, kill: bool) -> int:
        """Let the child end, or kill it at a random moment: mostly after its first event,
        within the uninterrupted run's length; now and then before it (start-up, replay)."""
        if not kill:
            return child.wait()
        if self.rng.random() < 0.1:
            code = child.kill_after(self.rng.uniform(0, 1.5))
        else:
            child.first_event()
            code = child.kill_after(self.rng.uniform(0, self.base.seconds * self.reach))
        if code == -9:
            self.tally.kills += 1
            self._after_kill()
        return code

    def _after_kill(self) -> None:
        try:
            self.run_id, entries, _ = read_run(self.scenario.journal, self.run_id)
        except IndexError:  # killed before the run was created: nothing to resume
            self.tally.phases["before the run existed"] += 1
            return
        self.may_repeat |= in_flight(entries)
        self.tally.phases[_phase(entries)] += 1

    def _run(self) -> None:
        team = str(self.scenario.team)
        for _ in range(5):
            child = self._child("run", team, GOAL, "--app-dir", str(HERE))
            code = self._maybe_kill(child, kill=True)
            self.tally.outcomes[f"run {_category(code, child)}"] += 1
            if self.run_id is None and code == -9:
                continue
            if self.run_id is None:
                self.run_id = read_run(self.scenario.journal)[0]
            return

    def _resume(self, kill: bool) -> int:
        assert self.run_id is not None
        child = self._child("resume", self.run_id)
        code = self._maybe_kill(child, kill)
        self.tally.resumes += 1
        self.tally.outcomes[f"resume {_category(code, child)}"] += 1
        if code not in (0, 3, -9):
            self.tally.anomaly([("resume refused or failed", child.tail())], self.run_id)
        return code

    def _approve_racing_resume(self, kill: bool) -> int:
        assert self.run_id is not None
        pending = anyio.run(_pending, self.scenario.journal, self.run_id)
        child = self._child("resume", self.run_id)
        time.sleep(self.rng.uniform(0, 1.5))  # the decision races the resume's start-up and replay
        for approval in pending:
            approve = self._child("approve", self.run_id, approval, events=False)
            code = approve.wait()
            self.tally.approves += 1
            self.tally.outcomes[f"approve {_category(code, approve)}"] += 1
        code = self._maybe_kill(child, kill)
        self.tally.resumes += 1
        self.tally.outcomes[f"resume {_category(code, child)}"] += 1
        if code not in (0, 3, -9):
            self.tally.anomaly([("resume refused or failed", child.tail())], self.run_id)
        return code

    def go(self) -> None:
        self.scenario.folder.mkdir(parents=True, exist_ok=True)
        self._run()
        if self.run_id is None:
            self.tally.anomaly([("no run", "every run was killed before it began")], "")
            return
        kills = self.kills - 1
        for _ in range(self.kills + 8):
            status = read_run(self.scenario.journal, self.run_id)[2]
            if status == "completed":
                break
            if status not in ("paused", "stalled"):
                self.tally.anomaly([("run ended otherwise", status)], self.run_id)
                return
            if status == "paused":
                code = self._approve_racing_resume(kill=kills > 0)
            else:
                code = self._resume(kill=kills > 0)
            kills -= code == -9
        self.check()

    def check(self) -> None:
        assert self.run_id is not None
        self.tally.trials += 1
        _, entries, status = read_run(self.scenario.journal, self.run_id)
        found: list[Anomaly] = []
        if status != "completed":
            found.append(("never completed", f"{status} after {self.count} processes"))
        elif answer_of(entries) != self.base.answer:
            found.append(("answer differs", f"{answer_of(entries)!r} != {self.base.answer!r}"))
        found += check_journal(entries, self.base.entries)
        found += check_ledger(Ledger(self.scenario.folder), self.base.ledger, self.may_repeat)
        self.tally.anomaly(found, f"{self.run_id} in {self.scenario.folder}")


def torture(
    scenario: Scenario, base: Baseline, tally: Tally, *, seed: int, kills: int, reach: float = 1.2
) -> None:
    """One trial: ``scenario``'s run, killed up to ``kills`` times (each at a random
    moment within ``reach`` lengths of the uninterrupted run), resumed, checked."""
    Trial(scenario, base, tally, random.Random(seed), kills, reach).go()


def _journals(backend: str, folder: Path, server: object) -> str:
    if backend == "sqlite":
        return str(folder / "runs.db")
    import uuid

    import psycopg

    url = str(server.url)  # type: ignore[attr-defined]
    schema = f"torture_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"'.encode())
    return f"{url}?options=-csearch_path%3D{schema}"


def _scenario(
    root: Path, backend: str, name: str, server: object, jitter: float, label: str
) -> Scenario:
    folder = root / backend / name / label
    folder.mkdir(parents=True)
    loop = "trio" if label[-1:] in "13579" else "asyncio"  # odd trials on trio
    return Scenario(name, _journals(backend, folder, server), folder, jitter, loop)


def _report(tally: Tally, seconds: float) -> None:
    print(
        f"trials {tally.trials}, kills {tally.kills}, resumes {tally.resumes}, "
        f"approves {tally.approves}, in {seconds:.0f} s"
    )
    for title, counts in (
        ("outcomes", tally.outcomes),
        ("kills landed", tally.phases),
        ("anomalies", tally.anomalies),
    ):
        print(f"{title}:" + ("" if counts else " none"))
        for key, n in counts.most_common():
            print(f"  {n:5d}  {key}")
    for line in tally.details[:40]:
        print("  -", line[:600])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per scenario and backend")
    parser.add_argument("--kills", type=int, default=4, help="kills per trial, at most")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--scenarios", default="plain,approvals")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jitter", type=float, default=0.01, help="max s each reply/tool sleeps")
    parser.add_argument("--folder", type=Path, default=None, help="kept; default: a temporary one")
    args = parser.parse_args()
    import tempfile

    from pg_server import PostgresServer

    root = args.folder or Path(tempfile.mkdtemp(prefix="crash-torture-"))
    server = PostgresServer(fsync=False) if "postgres" in args.backends else None
    if server is not None:
        server.start()
    tally, started = Tally(), time.monotonic()
    try:
        for backend in args.backends.split(","):
            for name in args.scenarios.split(","):
                at = functools.partial(_scenario, root, backend, name, server, args.jitter)
                base = baseline(at("baseline"))
                for n in range(args.trials):
                    torture(
                        at(f"t{n}"), base, tally, seed=args.seed * 100_000 + n, kills=args.kills
                    )
                    print(
                        f"{backend} {name} trial {n}: kills {tally.kills}, "
                        f"anomalies {sum(tally.anomalies.values())}",
                        flush=True,
                    )
    finally:
        if server is not None:
            server.stop()
    _report(tally, time.monotonic() - started)
    print("folder:", root)


if __name__ == "__main__":
    main()
