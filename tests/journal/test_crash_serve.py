"""The service's kill/resume torture, fast (``bench/crash_serve.py`` is the long one).

``regiment serve`` of ``bench/torture/team.toml`` is SIGKILLed while the run it was
posted goes on, started again on the same journal, and ``POST /runs/{id}/resume``
finishes the run; the approvals team's run pauses, the service is killed, and the
restarted one approves omni's charge over HTTP. The run must end as the uninterrupted
one did (the answer, committed steps, each side effect once per key, the journal in
order with nothing twice), the restarted service must show it completed with that
answer, and the event stream its followers got across the restarts (each reconnect
from the last event it had) must be what a fresh follower replays: no event missing
or twice. At each kill the journal must hold every event a follower got (a reconnect's
``Last-Event-ID`` names it), so the plain run's first kill comes right after a burst.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from crash_serve import check_stream, serve_torture
from crash_torture import Scenario, Tally

from .test_crash_torture import _baseline


# A dozen processes (services, the baseline run, followers): 19 s for plain in a loaded
# run; past the suite's 60 s, pytest-timeout's thread method ends the whole xdist worker
# (which left its PostgreSQL server running). Its waits are bounded.
@pytest.mark.timeout(240)
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
    # plain: the first kill right after the follower got the 9th event (Replanned: the
    # step's check failed, a burst); the trial checks the journal kept every event a
    # follower got (its Last-Event-ID), so the resumed run numbers its events after it
    serve_torture(
        scenario, base, tally, seed=len(name), kills=1, nth=9 if name == "plain" else None
    )
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
