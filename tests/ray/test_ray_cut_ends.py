"""A step cut on a Ray replica whose tool ignores the cancel: its run does not wait for
it. The step's report is made in the team's process at the cut, so the run goes on at
once; the wait for its end there (up to the worker's ``cancel_grace``, then its
replica is killed for Ray to restart) belongs to the worker, and the team's stop waits
for it. Before, every run that cut such a step waited the whole grace itself."""

from __future__ import annotations

import dataclasses
import logging
import os

import anyio
import pytest

from regiment.hierarchy import (
    Event,
    RunCompleted,
    RunningTeam,
    StaleReportDropped,
    StepDispatched,
    Team,
    Worker,
)
from regiment.models import ModelRequest

from ._ray_team import holder_team, plan_text

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

_TOLD = 30  # seconds for a replica's process to end once killed
HOLD = {"id": "s2", "description": "Hold order 88213", "worker": "holder"}
V1 = plan_text(
    {"id": "s1", "description": "Probe order 88213", "worker": "local", "check": "fails"}, HOLD
)
V2 = plan_text({"id": "s3", "description": "Recover order 88213", "worker": "local"})


def _plans(request: ModelRequest) -> str:
    return {"planner": V1, "replanner": V2}.get(request.role or "", "final answer")


def _graced(team: Team, grace: float) -> Team:
    holder, local = team.workers
    assert isinstance(holder, Worker)
    return dataclasses.replace(
        team, workers=[dataclasses.replace(holder, cancel_grace=grace), local]
    )


def _said(caplog: pytest.LogCaptureFixture, logger: str, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and words in r.getMessage()]


async def _ended(pid: int) -> None:
    """Once process ``pid`` has ended."""
    try:
        pidfd = os.pidfd_open(pid)  # readable once the process has ended
    except ProcessLookupError:
        return  # ended (and reaped) already
    try:
        with anyio.fail_after(_TOLD):
            await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


async def _streamed(running: RunningTeam) -> list[Event]:
    with anyio.fail_after(45):  # (a replica's start is Team.start()'s, not in this)
        async with running.stream("hold order 88213") as events:
            return [event async for event in events]


async def test_a_replan_does_not_wait_for_the_cut_step_to_end_on_its_replica(
    probe: tuple[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    # s1's check fails once s2's tool holds on its replica: the replan cuts s2, whose
    # tool ignores the cancel until the probe releases it. A grace far past the run's
    # fail_after: before, the run waited all of it, and failed there.
    caplog.set_level(logging.WARNING, logger="regiment")
    name, handle = probe
    team = _graced(holder_team(name, _plans, ignores=True, calls=True, num_cpus=0), 100.0)
    async with team.start() as running:
        try:
            seen = await _streamed(running)
        finally:  # (a failure, too, must let the tool return: the stop waits for it)
            state = await handle.state.remote()  # type: ignore[attr-defined]
            calls = await handle.release.remote()  # type: ignore[attr-defined]
    (pid,) = state["started"]
    assert state["cancelled"] == []  # its tool still ran on the replica: not waited for
    assert calls == {pid: "finished"}
    closing = seen[-1]
    assert isinstance(closing, RunCompleted), closing
    assert set(closing.result.committed) == {"s3"}  # (s1 failed its check)
    dropped = [e for e in seen if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.status) for e in dropped] == [("s2", "cancelled")]
    # The team's stop waited for the step's end there, its tool's cleanup included.
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert state["cancelled"] == [pid]
    assert _said(caplog, "regiment.ray", "ignores cancellation") == []  # it ended in its grace
    assert _said(caplog, "regiment.worker", "did not stop within") == []


async def test_the_team_stop_waits_for_a_cut_step_then_restarts_its_replica(
    probe: tuple[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="regiment")
    name, handle = probe
    team = _graced(holder_team(name, [V1], ignores=True, num_cpus=0), 1.0)
    async with team.start() as running, running.stream("hold order 88213") as events:
        async for event in events:
            if isinstance(event, StepDispatched) and event.step_id == "s2":
                (pid,) = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                break  # leaving both blocks: the run is cancelled, the team stops
    # Said by the time the stop is over: the stop waited for the grace, then the kill.
    (killed,) = _said(caplog, "regiment.ray", "ignores cancellation")
    assert "did not end on its Ray replica 0 within 1 s of its cancel" in killed, killed
    # Nothing said the stop waits for the tool to return (on Ray, it does not).
    assert _said(caplog, "regiment.team", "ignores cancellation") == []
    assert _said(caplog, "regiment.worker", "did not stop within") == []
    # Nor that the replica, restarting, did not answer the stop: the team had it killed
    # (said above); a replica that fails to answer is still named (test_ray_stop.py).
    assert _said(caplog, "regiment.ray", "as the team stopped") == []
    await _ended(pid)
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert state["cancelled"] == []  # killed, not ended: its tool's finally never ran
