"""The service's kill/resume torture, fast (``bench/crash_serve.py`` is the long one).

``regiment serve`` of ``bench/torture/team.toml`` is SIGKILLed while the run it was
posted goes on, started again on the same journal, and ``POST /runs/{id}/resume``
finishes the run; the approvals team's run pauses, the service is killed, and the
restarted one approves omni's charge over HTTP. The run must end as the uninterrupted
one did (the answer, committed steps, each side effect once per key, the journal in
order with nothing twice), the restarted service must show it completed with that
answer, and the event stream its followers got across the restarts (each reconnect
from the last event it had) must be what a fresh follower replays: no event missing
or twice.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from crash_children import read_run
from crash_serve import check_stream, serve_torture
from crash_service import Follower, Service
from crash_torture import GOAL, Scenario, Tally

from regiment.journal import EventRecorded

from .test_crash_torture import _baseline


@pytest.mark.parametrize("name", ["plain", "approvals"])
def test_a_service_killed_at_random_resumes_its_run_as_if_never_killed(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "baseline"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "bench" / "torture"))
    monkeypatch.setenv("TORTURE_LEDGER", str(folder))
    base = anyio.run(_baseline, name, folder)
    scenario = Scenario(name, str(tmp_path / "runs.db"), tmp_path / "trial", jitter=0.05)
    tally = Tally()
    serve_torture(scenario, base, tally, seed=len(name), kills=1)
    assert tally.kills >= 1, tally
    assert tally.trials == 1, tally.details
    assert not tally.anomalies, tally.details
    if name == "approvals":
        assert tally.approves >= 1, tally


def test_the_stream_check_sees_a_gap_a_repeat_and_a_changed_event() -> None:
    replay = [(1, "RunStarted", "{}"), (2, "PlanCreated", "{}"), (3, "RunCompleted", "{}")]
    assert check_stream(replay, replay) == []
    kinds = [kind for kind, _ in check_stream([replay[0], replay[2]], replay)]
    assert kinds == ["stream gap"]
    kinds = [kind for kind, _ in check_stream([*replay[:2], replay[1], replay[2]], replay)]
    assert kinds == ["stream duplicate or out of order"]
    changed = [replay[0], (2, "StepDispatched", "{}"), replay[2]]
    assert [kind for kind, _ in check_stream(changed, replay)] == ["stream differs"]


def test_a_follower_never_gets_an_event_the_journal_loses_at_a_kill(tmp_path: Path) -> None:
    """A follower's ``Last-Event-ID`` names an event the journal keeps: killed right
    after a follower got an event, the service leaves it journaled, so the resumed run
    numbers its events after it and the reconnect gets the rest, nothing missed."""
    scenario = Scenario("plain", str(tmp_path / "runs.db"), tmp_path, jitter=0.2)
    service = Service(scenario, "first")
    assert service.ready(), service.tail()
    run_id = service.http.post("/runs", json={"goal": GOAL}).json()["run_id"]
    follower = Follower(service.url, run_id).start()
    while follower.count() < 9 and follower.thread and follower.thread.is_alive():
        time.sleep(0.001)  # the 9th is Replanned: the step's check failed, a burst
    assert service.kill_after(0) == -9
    follower.join()
    _, entries, _ = read_run(scenario.journal, run_id)
    journaled = sum(isinstance(e.record, EventRecorded) for e in entries)
    assert journaled >= follower.count() >= 9, (journaled, follower.got)
    again = Service(scenario, "again")
    assert again.ready(), again.tail()
    assert again.http.post(f"/runs/{run_id}/resume").status_code == 202
    rest = Follower(again.url, run_id, follower.got[-1][0]).start()
    rest.join()
    replay = Follower(again.url, run_id).start()
    replay.join()
    assert again.stop() == 0
    assert rest.terminal() == "RunCompleted", rest.got
    assert check_stream(follower.got + rest.got, replay.got) == []
