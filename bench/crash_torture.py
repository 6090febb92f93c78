"""Kill -9 journaled ``regiment run`` processes at random moments, resume them, check.

``python bench/crash_torture.py [--trials 20] [--kills 4] [--backends sqlite,postgres]
[--scenarios plain,approvals] [--seed 1] [--jitter 0.01]`` runs the team of
``bench/torture/team.toml`` (two plan versions, a replan, parallel steps, a critique
round, tools with side effects in files outside the journal) as ``regiment run``
subprocesses, SIGKILLs each at a random moment after its first event, resumes it with
``regiment resume`` (killed at random too, up to ``--kills`` times), and then checks that
the run completed with the uninterrupted run's answer, committed the same steps, did
every side effect once per idempotency key (a body ran again only in another process,
after a kill of the one before and before its result was journaled: read from the final
journal, the ledger and ``kills.jsonl``, not at the kill), and that its journal reads in order with no record twice. ``approvals``
runs ``team_approval.toml``, whose omni charge waits for a decision: the paused run is
approved by ``regiment approve`` in another process racing a ``regiment resume``.
``nested``: ``team_nested.toml``, whose one step is that team, nested. Every run (nested ones
too) must read clean with ``regiment show --json`` in another process.
It prints the counts: kills, resumes, outcomes, where the kills landed, anomalies by kind.
"""

from __future__ import annotations

import argparse
import functools
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from crash_checks import Anomaly, Ledger, check_journal, check_ledger
from crash_children import (
    HERE,
    TEAMS,
    Child,
    Scenario,
    answer_of,
    journal_for,
    nested_runs,
    pending,
    phase,
    read_run,
    shown_clean,
)

from regiment.journal import Entry, EventRecorded, ToolCallStarted

__all__ = (
    "TEAMS",
    "Baseline",
    "Scenario",
    "Tally",
    "Trial",
    "TrialOf",
    "baseline",
    "checked_run",
    "run_trials",
    "torture",
)

GOAL = "settle the accounts"
# Where the journal must end when the team held at a role for 1.5 s before the kill.
HELD = {
    "replanner": "after CheckFailed",
    "critic": "after StepCompleted",
    "synthesizer": "after SynthesisStarted",
}


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
class Baseline:
    answer: str | None
    entries: tuple[Entry, ...]
    ledger: Ledger
    seconds: float = 1.5  # from its first event to its first end (a pause, or done)

    @property
    def events(self) -> int:
        """About how many event lines its ``--events jsonl`` wrote (the journal's events
        and a tool call's start and end each)."""
        return sum(isinstance(e.record, EventRecorded | ToolCallStarted) for e in self.entries) + 8


TrialOf: TypeAlias = Callable[[Scenario, Baseline, Tally, int, int], None]
"""One trial of a torture: ``(scenario, baseline, tally, seed, n)``, ``n`` counting from 0."""


def baseline(scenario: Scenario) -> Baseline:
    """The uninterrupted run (for ``approvals``: paused, approved, resumed once); its"""
    scenario.folder.mkdir(parents=True, exist_ok=True)
    child = Child(scenario, "baseline", "run", str(scenario.team), GOAL, "--app-dir", str(HERE))
    child.first_event()
    began = time.monotonic()
    code = child.wait()
    seconds = time.monotonic() - began
    run_id, entries, _ = read_run(scenario.journal)
    if code == 3:
        for approval in pending(scenario.journal, run_id):
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
    reach: float = 1.0  # kills land before this share of the uninterrupted run's events
    hold: str = ""  # the run's first kill: where its brain holds at this role's call
    run_id: str | None = None
    count: int = 0

    def _child(self, what: str, *args: str, events: bool = True) -> Child:
        self.count += 1
        return Child(self.scenario, f"{what}{self.count}", what, *args, events=events)

    def _maybe_kill(self, child: Child, kill: bool) -> int:
        """Let the child end, or kill it at a random moment: mostly after a random one of
        its events (a resume writes the replayed ones too; ``nested``: within ``reach`` times the
        time the uninterrupted run took from its first event to its first end); now and then within its first 1.5 s (start-up, the journal's open, the
        lease, the replay)."""
        if not kill:
            return child.wait()
        if self.rng.random() < 0.1:
            code = child.kill_after(self.rng.uniform(0, 1.5))
        elif self.scenario.name == "nested":  # its nested run's events are not in the file
            child.first_event()
            code = child.kill_after(self.rng.uniform(0, self.base.seconds * self.reach))
        else:
            child.first_event()
            nth = self.rng.randint(1, max(1, int(self.base.events * self.reach)))
            code = child.kill_at_event(nth, self.rng.uniform(0, self.scenario.jitter * 2))
        if code == -9:
            self.tally.kills += 1
            self._after_kill()
        return code

    def _after_kill(self, how: str = "") -> str:
        try:
            self.run_id, entries, _ = read_run(self.scenario.journal, self.run_id)
        except IndexError:  # killed before the run was created: nothing to resume
            self.tally.phases["before the run existed"] += 1
            return ""
        self.tally.phases[how + phase(entries)] += 1
        return phase(entries)

    def _run(self) -> None:
        team = str(self.scenario.team)
        for _ in range(5):
            if self.hold:
                self.count += 1
                args = ("run", team, GOAL, "--app-dir", str(HERE))
                child = Child(self.scenario, f"run{self.count}", *args, hold=self.hold)
                code = child.kill_when_held()
                self.tally.kills += code == -9
                where = self._after_kill(f"held at {self.hold}: ")
                if code == -9 and not where.startswith(HELD[self.hold]):  # 1.5 s to commit
                    self.tally.anomaly([("records lost at a kill", f"{self.hold}: {where}")], "")
            else:
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
        twin = self._child("resume", self.run_id) if self.rng.random() < 0.25 else None
        code = self._maybe_kill(child, kill)
        self._resumed(code, child, "resume", rival=twin is not None)
        if twin is not None:  # two resumes at once: one runs it, the other is refused
            self._resumed(twin.wait(), twin, "twin resume", rival=True)
        return code

    def _resumed(self, code: int, child: Child, what: str, *, rival: bool) -> None:
        """Count a resume's outcome; with a ``rival`` (another resume, an approve) at the
        same time, a refusal saying the rival holds the run or finished it is expected."""
        self.tally.resumes += 1
        self.tally.outcomes[f"{what} {_category(code, child)}"] += 1
        told = ("is owned by", "already finished")
        refused = rival and code == 2 and any(w in child.tail() for w in told)
        if code not in (0, 3, -9) and not refused:
            self.tally.anomaly([(f"{what} refused or failed", child.tail())], str(self.run_id))

    def _approve_racing_resume(self, kill: bool) -> int:
        assert self.run_id is not None
        asked = pending(self.scenario.journal, self.run_id)
        child = self._child("resume", self.run_id)
        time.sleep(self.rng.uniform(0, 1.5))  # the decision races the resume's start-up and replay
        for approval in asked:
            approve = self._child("approve", self.run_id, approval, events=False)
            if self.rng.random() < 0.25:  # killed as it decides: the decision is or is not in
                code = approve.kill_after(self.rng.uniform(0, 2.5))
                self.tally.kills += code == -9
            else:
                code = approve.wait()
            self.tally.approves += 1
            self.tally.outcomes[f"approve {_category(code, approve)}"] += 1
            told = ("is live in another process", "was already decided")
            if code not in (0, -9) and not any(w in approve.tail() for w in told):
                self.tally.anomaly([("approve refused or failed", approve.tail())], self.run_id)
        code = self._maybe_kill(child, kill)
        self._resumed(code, child, "resume", rival=bool(asked))  # the approve holds the lease
        return code

    def go(self) -> None:
        self.scenario.folder.mkdir(parents=True, exist_ok=True)
        before = self.tally.kills
        self._run()
        if self.run_id is None:
            self.tally.anomaly([("no run", "every run was killed before it began")], "")
            return
        kills = self.kills - (self.tally.kills - before)  # a run that ended first: not one
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
        _, found = checked_run(self.scenario, self.base, self.run_id, self.count)
        self.tally.anomaly(found, f"{self.run_id} in {self.scenario.folder}")


def checked_run(
    scenario: Scenario, base: Baseline, run_id: str, processes: int
) -> tuple[str, list[Anomaly]]:
    """Run ``run_id``'s status as its journal ends, and what is wrong with it against
    ``base`` (unfinished after ``processes`` processes ran it, another answer, its journal,
    its tool bodies' ledger)."""
    _, entries, status = read_run(scenario.journal, run_id)
    found: list[Anomaly] = []
    if status != "completed":
        found.append(("never completed", f"{status} after {processes} processes"))
    elif answer_of(entries) != base.answer:
        found.append(("answer differs", f"{answer_of(entries)!r} != {base.answer!r}"))
    nested = nested_runs(scenario.journal, run_id)
    found += check_journal(entries, base.entries)
    for records in nested.values():  # in order, no record twice (their steps: any attempt)
        found += check_journal(records, records)
    found += check_ledger(Ledger(scenario.folder), base.ledger, entries, [*nested.values()])
    for shown in (run_id, *nested):
        found += shown_clean(scenario.journal, shown)
    return status, found


def torture(
    scenario: Scenario,
    base: Baseline,
    tally: Tally,
    *,
    seed: int,
    kills: int,
    reach: float = 1.0,
    hold: str = "",
) -> None:
    """One trial: ``scenario``'s run, killed up to ``kills`` times (each at a random
    moment: once it has written its n-th event, n at random up to ``reach`` times the
    uninterrupted run's events, and a little after; ``hold``: the first kill where the
    team's brain holds at that role's first call), resumed, checked."""
    Trial(scenario, base, tally, random.Random(seed), kills, reach, hold).go()


def _scenario(
    root: Path, backend: str, name: str, server: object, jitter: float, label: str
) -> Scenario:
    folder = root / backend / name / label
    folder.mkdir(parents=True)
    loop = "trio" if label[-1:] in "13579" else "asyncio"  # odd trials on trio
    return Scenario(name, journal_for(backend, folder, server), folder, jitter, loop)


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
    parser.add_argument("--scenarios", default="plain,approvals,nested")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--holds",
        default="replanner,critic,synthesizer",
        help="every third trial's first kill is where the team holds at one of these roles",
    )
    parser.add_argument("--jitter", type=float, default=0.01, help="max s each reply/tool sleeps")
    parser.add_argument("--folder", type=Path, default=None, help="kept; default: a temporary one")
    args = parser.parse_args()
    holds = args.holds.split(",") if args.holds else []

    def trial(scenario: Scenario, base: Baseline, tally: Tally, seed: int, n: int) -> None:
        held = holds and n % 3 == 0 and scenario.name != "nested"  # (nested: its runs show)
        hold = holds[n // 3 % len(holds)] if held else ""
        torture(scenario, base, tally, seed=seed, kills=args.kills, hold=hold)

    run_trials(args, "crash-torture-", trial)


def run_trials(args: argparse.Namespace, prefix: str, trial: TrialOf) -> None:
    """A torture's trials: for each of ``args.backends`` and ``args.scenarios`` a baseline,
    then ``args.trials`` trials (``trial(scenario, baseline, tally, seed, n)``), a line
    after each, in ``args.folder`` (else a temporary folder named ``prefix...``), on a
    PostgreSQL server of its own if one is asked for; then the report."""
    import tempfile

    from pg_server import PostgresServer

    root = Path(args.folder or tempfile.mkdtemp(prefix=prefix))
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
                    trial(at(f"t{n}"), base, tally, args.seed * 100_000 + n, n)
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
