"""Kill -9 ``regiment serve`` at random moments of a run, restart it, resume, check.

``python bench/crash_serve.py [--trials 10] [--kills 4] [--backends sqlite,postgres]
[--scenarios plain,approvals] [--seed 1] [--jitter 0.1]`` posts the torture team's goal
(``bench/torture/team.toml``, as ``crash_torture.py`` runs it) to a ``regiment serve``
on a fresh SQLite file or PostgreSQL schema, follows the run's event stream and SIGKILLs
the service after a random one of its events (or at a random moment of its first 3 s:
a follower connects and reads late on a loaded machine);
starts the service again on the same journal, resumes the run with ``POST
/runs/{id}/resume`` (a ``regiment resume`` in another process racing it a quarter of the
time) and follows the stream again from the last event it got (``Last-Event-ID``), up to
``--kills`` times. The approvals team pauses for omni's charge: the restarted service
approves it over HTTP (``POST /approvals/{id}``) while ``regiment approve`` races it.
At the end: what ``crash_torture.py`` checks (the answer, committed steps, each side
effect once per key, the journal dense and in order with nothing twice), the service's
view (``GET /runs/{id}``: completed, the same answer), and the run's stream: what the
followers got across the restarts, joined, is the stream a fresh follower replays, no
event missing or twice, numbers rising.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, field

from crash_checks import Anomaly
from crash_children import HERE, Child, Scenario, phase, read_run
from crash_service import Follower, Frame, Service
from crash_torture import GOAL, Baseline, Tally, _category, checked_run, run_trials

from regiment.journal import EventRecorded

__all__ = ("ServeTrial", "check_stream", "serve_torture")


def check_stream(seen: list[Frame], replay: list[Frame]) -> list[Anomaly]:
    """The followers' frames joined against a fresh replay: the same frames, numbers rising."""
    found: list[Anomaly] = []
    ids = [f[0] for f in seen]
    if ids != sorted(set(ids)):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        found.append(("stream duplicate or out of order", f"ids {ids[:60]}; twice: {twice}"))
    replayed = [f[0] for f in replay]
    if replayed != sorted(set(replayed)):
        found.append(("replay duplicate or out of order", f"ids {replayed[:60]}"))
    missing = sorted(set(replayed) - set(ids))
    if missing:
        found.append(("stream gap", f"ids {missing} replayed but never followed"))
    extra = sorted(set(ids) - set(replayed))
    if extra:
        found.append(("stream extra", f"ids {extra} followed but not replayed"))
    by_id = {f[0]: f for f in replay}
    differ = [f for f in seen if f[0] in by_id and by_id[f[0]] != f]
    if differ:
        said = [f"{f[0]} {f[1]} {f[2][:200]} / replayed: {by_id[f[0]][2][:200]}" for f in differ]
        found.append(("stream differs", "; ".join(said)))
    return found


@dataclass
class ServeTrial:
    """One run posted to a service that is killed and restarted until the run completes."""

    scenario: Scenario
    base: Baseline
    tally: Tally
    rng: random.Random
    kills: int
    nth: int | None = None  # the first kill right after the follower got this event
    run_id: str = ""
    seen: list[Frame] = field(default_factory=list)
    count: int = 0
    service: Service | None = None

    def _start(self) -> Service:
        self.count += 1
        service = Service(self.scenario, f"serve{self.count}")
        if not service.ready():
            raise RuntimeError(f"regiment serve exited {service.process.wait()}: {service.tail()}")
        self.service = service
        return service

    @property
    def events(self) -> int:
        """How many numbered events the uninterrupted run's stream has."""
        return sum(isinstance(e.record, EventRecorded) for e in self.base.entries)

    def _last(self) -> int:
        return self.seen[-1][0] if self.seen else 0

    def _follow(self, service: Service, kill: bool) -> bool:
        """Follow the run's stream from the last event seen; kill the service after a
        random one of the events (or at a random moment), or let the stream end."""
        follower = Follower(service.url, self.run_id, self._last()).start()
        killed = False
        if kill and self.nth is not None:  # at once after a known event (then at random)
            nth, self.nth = self.nth, None
            while follower.count() < nth and follower.thread and follower.thread.is_alive():
                time.sleep(0.001)
            killed = service.kill_after(0) == -9
            if follower.count() < nth:
                said = f"the stream ended ({follower.ended}) after {follower.count()} events"
                self.tally.anomaly([(f"no kill after event {nth}", said)], self.run_id)
        elif kill:
            if self.rng.random() < 0.4:  # a follower may lag: kills by the clock too
                killed = service.kill_after(self.rng.uniform(0, 3.0)) == -9
            else:
                left = max(1, self.events - len(self.seen))
                nth = self.rng.randint(1, left)
                while follower.count() < nth and follower.thread and follower.thread.is_alive():
                    time.sleep(0.002)
                killed = service.kill_after(self.rng.uniform(0, self.scenario.jitter * 2)) == -9
        follower.join(120 if not killed else 20)
        if follower.thread and follower.thread.is_alive():
            self.tally.anomaly([("follower hung", follower.ended)], self.run_id)
        self.seen += follower.got
        self.tally.outcomes[f"follower {follower.ended or 'hung'}"] += 1
        if killed:
            self.tally.kills += 1
            _, entries, _ = read_run(self.scenario.journal, self.run_id)
            self.tally.phases[phase(entries)] += 1
            # A follower's Last-Event-ID must name an event the journal kept: the resumed
            # run numbers its events after the journaled ones, so one it lost is skipped.
            journaled = sum(isinstance(e.record, EventRecorded) for e in entries)
            if journaled < self._last():
                lost = f"followed up to event {self._last()}, the journal kept {journaled}"
                self.tally.anomaly([("followed an event the journal lost", lost)], self.run_id)
        elif follower.got and not follower.terminal():
            self.tally.outcomes["stream ended without a last event"] += 1
        return killed

    def _kill_paused(self, service: Service) -> None:
        service.kill_after(self.rng.uniform(0, 0.5))
        self.tally.kills += 1
        self.tally.phases["paused for approval"] += 1

    def _approve(self, service: Service) -> None:
        """Decide the run's pending requests over HTTP, ``regiment approve`` racing."""
        listed = service.http.get("/approvals", params={"run_id": self.run_id}).json()
        for asked in listed["approvals"]:
            rival = None
            if self.rng.random() < 0.5:
                self.count += 1
                args = ("approve", self.run_id, asked["request_id"])
                rival = Child(self.scenario, f"approve{self.count}", *args, events=False)
                time.sleep(self.rng.uniform(0, 1.2))
            answer = service.http.post(
                f"/approvals/{asked['request_id']}", json={"decision": "approve"}
            )
            self.tally.approves += 1
            self.tally.outcomes[f"POST approve {answer.status_code}"] += 1
            decided = "already decided" in answer.text
            if answer.status_code != 200 and not (rival and answer.status_code == 409 and decided):
                self.tally.anomaly([("HTTP approve refused", answer.text[:300])], self.run_id)
            if rival is not None:
                code = rival.wait()
                self.tally.approves += 1
                self.tally.outcomes[f"approve {_category(code, rival)}"] += 1
                told = ("was already decided", "is live in another process")
                if code != 0 and not any(w in rival.tail() for w in told):
                    self.tally.anomaly([("approve refused or failed", rival.tail())], self.run_id)

    def _resume(self, service: Service) -> Child | None:
        """``POST /runs/{id}/resume``, a ``regiment resume`` racing it now and then."""
        rival = None
        if self.rng.random() < 0.25:
            self.count += 1
            args = ("resume", str(self.scenario.team), self.run_id, "--app-dir", str(HERE))
            rival = Child(self.scenario, f"resume{self.count}", *args)
            time.sleep(self.rng.uniform(0, 1.5))
        answer = service.http.post(f"/runs/{self.run_id}/resume")
        self.tally.resumes += 1
        self.tally.outcomes[f"POST resume {answer.status_code}"] += 1
        told = ("owned by", "already finished", "finished", "already")
        if answer.status_code != 202 and not (
            rival and answer.status_code == 409 and any(w in answer.text for w in told)
        ):
            self.tally.anomaly([("HTTP resume refused", answer.text[:300])], self.run_id)
        return rival

    def _rival_done(self, rival: Child) -> None:
        code = rival.wait(timeout=180)
        self.tally.resumes += 1
        self.tally.outcomes[f"CLI resume {_category(code, rival)}"] += 1
        told = ("is owned by", "already finished")
        if code not in (0, 3) and not (code == 2 and any(w in rival.tail() for w in told)):
            self.tally.anomaly([("CLI resume refused or failed", rival.tail())], self.run_id)

    def go(self) -> None:
        self.scenario.folder.mkdir(parents=True, exist_ok=True)
        service = self._start()
        posted = service.http.post("/runs", json={"goal": GOAL})
        assert posted.status_code == 202, posted.text
        self.run_id = posted.json()["run_id"]
        kills = self.kills - (self._follow(service, kill=True))
        for _ in range(self.kills + 8):
            status = read_run(self.scenario.journal, self.run_id)[2]
            if status == "completed":
                break
            if service.process.poll() is None and status == "paused":
                self._kill_paused(service)  # the decision comes on the restarted service
            elif service.process.poll() is None:
                service.stop()
            service = self._start()
            if status == "paused":
                self._approve(service)
            rival = self._resume(service)
            kills -= self._follow(service, kill=kills > 0)
            if rival is not None:
                self._rival_done(rival)
        self.check()

    def _final_view(self) -> list[Anomaly]:
        """The service's view of the completed run, and the rest of its stream."""
        service = self.service if self.service and self.service.process.poll() is None else None
        service = service or self._start()
        self._follow(service, kill=False)  # what came after the last follower's end
        found: list[Anomaly] = []
        shown = service.http.get(f"/runs/{self.run_id}").json()
        if shown.get("status") != "completed" or shown.get("answer") != self.base.answer:
            found.append(
                ("service view differs", f"{shown.get('status')}: {shown.get('answer')!r}")
            )
        replay = Follower(service.url, self.run_id).start()
        replay.join()
        found += check_stream(self.seen, replay.got)
        code = service.stop()
        if code != 0:
            found.append(("service did not stop cleanly", f"exit {code}: {service.tail()}"))
        return found

    def check(self) -> None:
        self.tally.trials += 1
        status, found = checked_run(self.scenario, self.base, self.run_id, self.count)
        if status == "completed":
            found += self._final_view()
        self.tally.anomaly(found, f"{self.run_id} in {self.scenario.folder}")


def serve_torture(
    scenario: Scenario,
    base: Baseline,
    tally: Tally,
    *,
    seed: int,
    kills: int,
    nth: int | None = None,
) -> None:
    """One trial (see the module's text); ``nth``: the first kill comes right after the
    follower got that event, not at random."""
    ServeTrial(scenario, base, tally, random.Random(seed), kills, nth).go()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per scenario and backend")
    parser.add_argument("--kills", type=int, default=4, help="kills of the service per trial")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--scenarios", default="plain,approvals")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jitter", type=float, default=0.1, help="max s each reply/tool sleeps")
    parser.add_argument("--folder", default=None, help="kept; default: a temporary one")
    args = parser.parse_args()

    def trial(scenario: Scenario, base: Baseline, tally: Tally, seed: int, n: int) -> None:
        serve_torture(scenario, base, tally, seed=seed, kills=args.kills)

    run_trials(args, "crash-serve-", trial)


if __name__ == "__main__":
    main()
