"""A Ray-placed step's calls go through the caller's journal: a retry after a lost
replica, and a resume after the caller's process died, replay what was committed
(a tool without an idempotency key runs once) and run again only what was in
flight, with its intent's idempotency key."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from types import ModuleType

import anyio
import psutil
import pytest

from regiment.hierarchy import StepCompleted
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import ModelCallFinished, ToolCallFinished, ToolCallStarted, open_journal

from ._killed import killed_child
from ._wire_team import GOAL, paid, payer_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

CHILD = Path(__file__).with_name("_wire_team.py")
OUTPUT = "paid 88213; held 88213"


async def test_a_retry_on_another_replica_replays_what_the_lost_one_committed(
    ray_session: ModuleType,
    probe: tuple[str, object],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    name, handle = probe
    namespace = ray_session.get_runtime_context().namespace
    ledger = str(tmp_path / "ledger.jsonl")
    team = payer_team(ledger, name, namespace, replicas=2, num_cpus=0)
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    async with team.start() as running, anyio.create_task_group() as tg:

        async def kill_the_replica_holding() -> None:
            (pid,) = await handle.wait_started.remote(1)  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)

        tg.start_soon(kill_the_replica_holding)
        result = await running.run(GOAL)

    assert result.status == "completed"
    (step,) = result.steps
    assert (step.status, step.output) == ("done", OUTPUT)
    assert [e.step_id for e in result.events if isinstance(e, StepCompleted)] == ["s1"]
    (payment,) = paid(ledger)  # replayed on the retry, not paid again
    state = await handle.state.remote()  # type: ignore[attr-defined]
    assert payment["pid"] == state["started"][0]  # by the replica that was then killed
    (key,) = state["asked"]
    assert state["asked"][key] == 2  # the call in flight ran again, with the same key
    assert key == f"{result.run_id}/v1/s1/1"  # hold's derived key: call 1 of s1
    assert (step.model_calls, step.tool_calls) == (3, 2)
    assert result.model_calls == 5  # plan, 3 worker calls, synthesis: none twice
    assert len([r for r in caplog.records if "retrying once" in r.getMessage()]) == 1


async def _killed_mid_step(
    address: str,
    namespace: str,
    journal: Path,
    ledger: str,
    probe: tuple[str, object],
    usd: float | None = None,
) -> str:
    """Run the payer team in a child process joined to this Ray (``usd``: with that money
    budget); SIGKILL it once its replica holds (pay's result journaled, hold's intent
    too); the run's id."""
    name, handle = probe
    argv = [sys.executable, str(CHILD), address, namespace, str(journal), ledger, name]

    async def holding() -> None:
        await handle.wait_started.remote(1)  # type: ignore[attr-defined]

    usd_argv = argv if usd is None else [*argv, str(usd)]
    return await killed_child(usd_argv, journal.with_suffix(".log"), holding)


async def test_a_run_whose_process_was_killed_mid_step_resumes_without_repeating_effects(
    ray_session: ModuleType, probe: tuple[str, object], tmp_path: Path
) -> None:
    name, handle = probe
    context = ray_session.get_runtime_context()
    namespace, address = context.namespace, context.gcs_address
    baseline = await payer_team(
        str(tmp_path / "baseline.jsonl"), name, namespace, block=False, num_cpus=0
    ).run(GOAL)
    assert baseline.steps[0].output == OUTPUT

    journal_path, ledger = tmp_path / "runs.db", str(tmp_path / "ledger.jsonl")
    run_id = await _killed_mid_step(address, namespace, journal_path, ledger, probe)
    (payment,) = paid(ledger)
    assert payment["pid"] != os.getpid()  # on the child's replica
    # The child's replica died with its owner: no remote work goes on (waited for, not slept on).
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(payment["pid"]).wait(timeout=60)
    assert not psutil.pid_exists(payment["pid"])

    # The killed owner's lease has not expired: this journal's clock runs past it.
    journal = await open_journal(str(journal_path), clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        records = [e.record for e in await journal.read(run_id)]
        assert [type(r).__name__ for r in records if isinstance(r, ToolCallStarted)] == [
            "ToolCallStarted",
            "ToolCallStarted",
        ]  # both intents were journaled by the caller, before the bodies ran
        assert len([r for r in records if isinstance(r, ToolCallFinished)]) == 1  # pay's
        keys = [r.call_key for r in records if isinstance(r, ModelCallFinished)]
        assert keys[-2:] == ["step/1/s1/1", "step/1/s1/2"]  # the replica's, the local keys
        team = payer_team(ledger, name, namespace, num_cpus=0)
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id)
        info = await journal.get_run(run_id)
    finally:
        await journal.close()

    assert info.status == "completed"
    assert (result.status, result.answer) == ("completed", baseline.answer)
    assert result.steps[0].output == baseline.steps[0].output == OUTPUT
    assert paid(ledger) == [payment]  # pay's journaled result was replayed: paid once
    state = await handle.state.remote()  # type: ignore[attr-defined]
    hold_key = f"{run_id}/v1/s1/1"
    assert state["asked"][hold_key] == 2  # in flight at the crash: once more, same key
    assert len(state["started"]) == 1
