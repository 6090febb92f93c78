"""Cancelling a run, or replanning, stops the step running on a Ray replica: the
remote tool sees the cancel, and the old version's report is dropped. A remote step
the planner cut says why, as an in-process one does."""

from __future__ import annotations

import dataclasses
import logging
import os

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    RunCompleted,
    RunFailed,
    StaleReportDropped,
    StepDispatched,
    Worker,
)
from regiment.models import ModelRequest

from ._ray_team import DropWaitingPlanner, holder_team, plan_text

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

_TOLD = 30  # seconds for the replica's tool to tell the probe it was cancelled
HOLD = {"id": "s1", "description": "Hold order 88213", "worker": "holder"}


async def test_leaving_a_run_cancels_its_remote_step(probe: tuple[str, object]) -> None:
    name, handle = probe
    team = holder_team(name, [plan_text(HOLD)], num_cpus=0)
    async with team.start() as running:
        async with running.stream("hold order 88213") as events:
            async for event in events:
                if isinstance(event, StepDispatched):
                    started = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                    break  # leaving the block cancels the run
        with anyio.fail_after(_TOLD):  # a cancel the tool was never told of fails, not hangs
            cancelled = await handle.wait_cancelled.remote()  # type: ignore[attr-defined]
        assert running.active_runs == 0
    assert cancelled == started  # the tool on the replica was cancelled, in its own process


async def test_a_replan_cancels_the_remote_step_and_drops_its_report(
    probe: tuple[str, object],
) -> None:
    name, handle = probe
    v1 = plan_text(
        {"id": "s1", "description": "Probe order 88213", "worker": "local", "check": "fails"},
        {**HOLD, "id": "s2"},
    )
    v2 = plan_text({"id": "s3", "description": "Recover order 88213", "worker": "local"})
    planner = DropWaitingPlanner(v1, v2)
    told: list[object] = []

    async def wait_told() -> None:  # before the team stops, as in the test above
        with anyio.fail_after(_TOLD):  # a cancel the tool was never told of fails, not hangs
            told.append(await handle.wait_cancelled.remote())  # type: ignore[attr-defined]

    team = holder_team(name, planner, num_cpus=0)
    seen = await planner.run(team, "hold order 88213", then=wait_told)
    closing = seen[-1]
    assert isinstance(closing, RunCompleted)
    result = closing.result
    dropped = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert [(e.step_id, e.report_version, e.current_version) for e in dropped] == [("s2", 1, 2)]
    assert dropped[0].status == "cancelled"
    assert result.stale_reports_dropped == 1
    assert "s2" not in result.committed
    (cancelled,) = told
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert cancelled == state["started"]
    assert len(state["started"]) == 1


async def test_cancelling_a_remote_step_leaves_the_calls_its_tool_made_to_finish(
    probe: tuple[str, object],
) -> None:
    """Ray's cancel of the step is not recursive: it would also cancel what the tool
    called, and so a tool's cleanup call (as ``hold`` telling its probe it stopped) that
    was on its way when Ray's cancel landed; the step is cancelled, the call is not."""
    name, handle = probe
    team = holder_team(name, [plan_text(HOLD)], calls=True, num_cpus=0)
    async with team.start() as running:
        async with running.stream("hold order 88213") as events:
            async for event in events:
                if isinstance(event, StepDispatched):
                    (pid,) = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                    break  # leaving the block cancels the run while the tool's call runs
        with anyio.fail_after(_TOLD):
            told = await handle.wait_cancelled.remote()  # type: ignore[attr-defined]
            calls = await handle.release.remote()  # type: ignore[attr-defined]
    assert told == [pid]  # the step was cancelled on its replica
    assert calls == {pid: "finished"}  # and the call its tool made was left to finish


async def test_a_remote_step_the_planner_cut_says_why(probe: tuple[str, object]) -> None:
    # The report the planner gets for a Ray-placed step it cut is made on its side (the
    # replica's own is dropped with the cancelled stream), so it gives the reason too.
    name, _ = probe
    v1 = plan_text(
        {"id": "s1", "description": "Probe order 88213", "worker": "local", "check": "fails"},
        {**HOLD, "id": "s2"},
    )
    team = dataclasses.replace(holder_team(name, [v1], num_cpus=0), budget=Budget(replans=0))
    async with team.start() as running, running.stream("hold order 88213") as events:
        seen = [event async for event in events]
    failed = seen[-1]  # s1's check failed with no replan left: s2 is cut as the run ends
    assert isinstance(failed, RunFailed)
    steps = {step.step_id: (step.status, step.error) for step in failed.steps}
    assert steps["s2"] == ("cancelled", "cancelled by the planner: the run is ending")


async def test_a_remote_step_that_will_not_stop_gets_its_replica_restarted(
    probe: tuple[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    """A tool that ignores the cancel held the cancel's wait for 10 s (and the team's
    stop with it), then went on running on its replica. The wait is the worker's
    ``cancel_grace``; past it, the replica is killed (Ray restarts it), saying why."""
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    caplog.set_level(logging.WARNING, logger="regiment.worker")
    name, handle = probe

    def plans(request: ModelRequest) -> str:
        return plan_text(HOLD) if request.role in ("planner", "replanner") else "held"

    team = holder_team(name, plans, ignores=True, num_cpus=0)
    holder, local = team.workers
    assert isinstance(holder, Worker)
    team = dataclasses.replace(team, workers=[dataclasses.replace(holder, cancel_grace=1.0), local])
    async with team.start() as running:
        async with running.stream("hold order 88213") as events:
            async for event in events:
                if isinstance(event, StepDispatched):
                    (pid,) = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                    break  # leaving the block cancels the run; the tool ignores it
        # Its replica's process ends (before the fix: alive until the team stopped).
        pidfd = os.pidfd_open(pid)  # readable once the process has ended
        try:
            with anyio.fail_after(_TOLD):
                await anyio.wait_readable(pidfd)
        finally:
            os.close(pidfd)
        assert running.active_runs == 0
        # The next step waits for the replica Ray restarts: not a loss (its retry kept).
        result = await running.run("hold order 88213")
        assert result.status == "completed", result
        assert [(s.step_id, s.status) for s in result.steps] == [("s1", "done")]
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert state["cancelled"] == []  # killed, not ended: its tool's finally never ran
    lost = [r.getMessage() for r in caplog.records if "died mid-step" in r.getMessage()]
    assert lost == []
    said = [r.getMessage() for r in caplog.records if "ignores cancellation" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("worker 'holder': step "), said
    assert "did not end on its Ray replica 0 within 1 s of its cancel" in said[0], said
    assert "The replica was killed so that nothing of the step runs on" in said[0], said
    # Not given up by the worker either (its warning said the step "still runs, and the
    # team's stop will wait for it", untrue here): its report was made at the cut, and
    # only the wait for its end on the replica took the grace (test_ray_cut_ends).
    worker = [r.getMessage() for r in caplog.records if r.name == "regiment.worker"]
    assert [m for m in worker if "did not stop within" in m] == [], worker
