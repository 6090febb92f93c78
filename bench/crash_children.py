"""The torture's processes (``crash_torture.py``): ``regiment`` subprocesses and the
journal reads between them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from regiment.journal import JournalError, nested_run_id, open_journal
from regiment.journal._records import EventRecorded, ModelCallFinished, RunFinished
from regiment.journal._views import Entry

__all__ = (
    "TEAMS",
    "Child",
    "Scenario",
    "answer_of",
    "journal_for",
    "killed",
    "pending",
    "phase",
    "read_run",
    "regiment",
    "nested_runs",
    "shown_clean",
)

HERE = Path(__file__).resolve().parent / "torture"
TEAMS = {
    "plain": HERE / "team.toml",
    "approvals": HERE / "team_approval.toml",
    "nested": HERE / "team_nested.toml",  # the approvals team as a nested team's worker
}


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


def killed(folder: Path, process: subprocess.Popen[bytes]) -> int:
    """SIGKILL ``process``, wait for it and note its pid and the time it was dead by in
    ``kills.jsonl`` (the ledger's check reads it); -9."""
    process.kill()
    code = process.wait()
    with (folder / "kills.jsonl").open("a") as f:
        f.write(json.dumps([process.pid, time.time()]) + "\n")
    return code


def regiment(*args: str) -> list[str]:
    return [sys.executable, "-m", "regiment", *args]


class Child:
    """A ``regiment`` subprocess writing its events to a file (the handshake: its first line)."""

    def __init__(
        self, scenario: Scenario, name: str, *args: str, events: bool = True, hold: str = ""
    ) -> None:
        self.folder = scenario.folder
        self.log = scenario.folder / f"{name}.log"
        self.out = scenario.folder / f"{name}.out"
        self.events = scenario.folder / f"{name}.events"
        extra = ["--events", "jsonl", "--events-file", str(self.events)] if events else []
        if args[0] in ("run", "resume"):
            extra += ["--backend", scenario.loop]
        env = scenario.env() | ({"TORTURE_HOLD": hold} if hold else {})
        with self.log.open("w") as log, self.out.open("w") as out:
            self.process = subprocess.Popen(
                regiment(*args, *extra),
                env=env,
                stdout=out,
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

    def kill_at_event(self, nth: int, delay: float) -> int:
        """SIGKILL ``delay`` s after it has written its ``nth`` event, unless it ended
        first; its exit code (-9: killed)."""
        while self.process.poll() is None:
            if self.events.exists() and self.events.read_bytes().count(b"\n") >= nth:
                return self.kill_after(delay)
            time.sleep(0.002)
        return self.process.wait()

    def kill_when_held(self, timeout: float = 60) -> int:
        """SIGKILL 1.5 s after the team says it holds at the role ``hold`` named (its
        brain's line on stdout); its exit code."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            if "holding at" in self.out.read_text():
                return self.kill_after(1.5)  # what waits is committed within a second
            time.sleep(0.005)
        return self.kill_after(0)

    def kill_after(self, delay: float) -> int:
        """SIGKILL after ``delay`` s unless it ended first; its exit code (-9: killed)."""
        try:
            return self.process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            return killed(self.folder, self.process)

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


async def _pending_async(journal_url: str, run_id: str) -> list[str]:
    journal = await open_journal(journal_url)
    try:
        return [p.approval_id for p in await journal.pending_approvals(run_id)]
    finally:
        await journal.close()


def pending(journal_url: str, run_id: str) -> list[str]:
    """The run's pending approval requests' ids."""
    return anyio.run(_pending_async, journal_url, run_id)


def read_run(journal_url: str, run_id: str | None = None) -> tuple[str, tuple[Entry, ...], str]:
    return anyio.run(_read, journal_url, run_id)


def phase(entries: tuple[Entry, ...]) -> str:
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


def shown_clean(journal: str, run_id: str) -> list[tuple[str, str]]:
    """What is wrong with ``regiment show --json RUN_ID`` of the run, as a user reads it
    (another process): it must exit 0 and show it completed, with every record read (no
    ``not_shown``) and nothing on stderr. Anomalies, as ``crash_checks``'."""
    args = ("show", run_id, "--json", "--journal", journal)
    done = subprocess.run(regiment(*args), capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or done.stderr:
        return [("show failed", f"exit {done.returncode}: {done.stderr.strip()[-300:]}")]
    shown = json.loads(done.stdout)
    if shown.get("status") != "completed" or shown.get("not_shown"):
        return [("show not clean", f"{shown.get('status')}, not shown: {shown.get('not_shown')}")]
    return []


async def _nested(journal_url: str, run_id: str) -> dict[str, tuple[Entry, ...]]:
    journal = await open_journal(journal_url)
    found: dict[str, tuple[Entry, ...]] = {}
    try:
        for entry in await journal.read(run_id):
            event = getattr(entry.record, "event", {})
            if getattr(entry.record, "kind", "") != "StepDispatched":
                continue
            at = (event["plan_version"], event["step_id"], event.get("attempt", 1))
            nested = nested_run_id(run_id, *at)
            try:
                found[nested] = await journal.read(nested)
            except JournalError:  # (a step of a worker that is no team: no such run)
                continue
        return {nested: entries for nested, entries in found.items() if entries}
    finally:
        await journal.close()


def nested_runs(journal_url: str, run_id: str) -> dict[str, tuple[Entry, ...]]:
    """The records of each nested team's run under ``run_id``'s steps, by run id."""
    return anyio.run(_nested, journal_url, run_id)


def journal_for(backend: str, folder: Path, server: object) -> str:
    """A fresh journal: an SQLite file in ``folder``, or a schema of its own on ``server``."""
    if backend == "sqlite":
        return str(folder / "runs.db")
    import uuid

    import psycopg

    url = str(server.url)  # type: ignore[attr-defined]
    schema = f"torture_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"'.encode())
    return f"{url}?options=-csearch_path%3D{schema}"
