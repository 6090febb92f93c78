"""A Ray replica's ``regiment`` log records reach the team's process, as an in-process
worker's do: with the step's ``run_id``, ``step_id`` and ``worker``, the replica's
process id, and at the levels the team's process logs. They went to the replica's
log file on its Ray node, where nobody saw them (a tool's result cut to its limit,
say)."""

from __future__ import annotations

import logging
import os
from types import ModuleType

import anyio
import pytest

from ._ray_logged import logged_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


def _from_replica(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.process != os.getpid()]


def _outside_and_in_steps(
    records: list[logging.LogRecord],
) -> tuple[list[logging.LogRecord], list[logging.LogRecord]]:
    """The replica's records made outside a step, and those made in one."""
    outside = [r for r in records if getattr(r, "step_id", None) is None]
    return outside, [r for r in records if r not in outside]


async def test_a_replicas_warnings_reach_the_teams_logging_with_their_step(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    team = logged_team("wordy 250", "noisy hello", "wordy 20")
    caplog.set_level(logging.WARNING)
    async with team.start() as running:
        runs = [await running.run(goal) for goal in ("first", "second", "third")]
    assert [r.status for r in runs] == ["completed"] * 3
    outside, records = _outside_and_in_steps(_from_replica(caplog))
    replica = records[0].process
    assert [(r.name, r.levelname, r.getMessage()) for r in outside] == [
        (name, "WARNING", f"[Ray replica 0 of 'w', pid {replica}] {said}")
        for name, said in (
            ("regiment.tests", "tool module imported"),  # as the replica unpickled its build
            ("regiment.tests", "building the worker"),
            ("openai", "an SDK's warning as the worker is built"),
        )
    ]  # each once (not again with a step), with the worker and no run's context
    assert {(r.worker, r.process, r.processName) for r in outside} == {  # type: ignore[attr-defined]
        ("w", replica, "ray::StepHost")
    }
    assert [(r.name, r.levelname) for r in records] == [
        ("regiment.tools", "WARNING"),  # the cut, in the step's task
        ("regiment.tests", "WARNING"),  # the sync tool's own, in the replica's thread
        ("httpx", "WARNING"),  # an SDK's, in that thread too (its INFO line is not sent)
    ]
    cut, noisy, sdk = records
    assert cut.getMessage().startswith(
        "tool 'wordy': its result was 250 characters, over the limit of 100"
    )
    assert noisy.getMessage() == "noisy was told 'hello'"
    assert sdk.getMessage() == "an SDK's warning in 'hello''s step"
    assert [(r.run_id, r.step_id, r.worker) for r in records] == [  # type: ignore[attr-defined]
        (runs[0].run_id, "s1", "w"),
        (runs[1].run_id, "s1", "w"),
        (runs[1].run_id, "s1", "w"),
    ]
    assert cut.processName == "ray::StepHost"
    assert cut.process == noisy.process == sdk.process != os.getpid()  # the replica's
    assert (cut.funcName, noisy.funcName) == ("fitted", "noisy")  # where it was made


async def test_a_replicas_records_outside_a_step_follow_the_teams_levels(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    """At DEBUG, a build's INFO line is sent too; an SDK's INFO lines never are (their
    retries: the replica's spans show them); at ERROR, none of the build's warnings."""
    caplog.set_level(logging.DEBUG, logger="regiment")
    async with logged_team("wordy 20").start():
        pass
    debug = [(r.name, r.levelname) for r in _from_replica(caplog)]
    caplog.clear()
    caplog.set_level(logging.ERROR, logger="regiment")
    caplog.set_level(logging.ERROR, logger="openai")
    async with logged_team("wordy 20").start():
        pass
    assert [(r.name, r.levelname) for r in _from_replica(caplog)] == []
    assert [d for d in debug if d[0] != "regiment.ray"] == [
        ("regiment.tests", "WARNING"),
        ("regiment.tests", "WARNING"),
        ("openai", "WARNING"),
        ("regiment.tests", "INFO"),
    ]


async def test_a_replica_sends_no_record_below_the_teams_level_and_sends_it_once_logged(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    team = logged_team("wordy 250", "wordy 250")
    caplog.set_level(logging.ERROR, logger="regiment")
    async with team.start() as running:
        await running.run("quiet")
        caplog.set_level(logging.DEBUG, logger="regiment")
        loud = await running.run("loud")
    records = _from_replica(caplog)
    assert [(r.levelname, r.run_id) for r in records if r.name == "regiment.tools"] == [  # type: ignore[attr-defined]
        ("WARNING", loud.run_id)
    ]


async def test_a_record_made_outside_any_step_while_one_runs_comes_with_its_report(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    """A thread a tool started itself carries no step's context: its record is kept on
    the replica and handed over with the step's report, once, as made outside a step."""
    caplog.set_level(logging.WARNING)
    async with logged_team("aside hi").start() as running:
        caplog.clear()  # what the replica's start logged
        result = await running.run("aside")
        (said,) = _from_replica(caplog)  # here already, not only as the team stops
    assert result.status == "completed"
    assert said.getMessage() == f"[Ray replica 0 of 'w', pid {said.process}] aside said 'hi'"
    assert (getattr(said, "step_id", None), said.worker) == (None, "w")  # type: ignore[attr-defined]


class _Arrival(logging.Handler):
    """Sets ``arrived`` once a record whose message holds ``said`` is logged here."""

    def __init__(self, said: str) -> None:
        super().__init__()
        self.said, self.arrived = said, anyio.Event()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.said in record.getMessage():
            self.records.append(record)
            self.arrived.set()


async def test_a_record_made_on_an_idle_replica_reaches_the_team_before_any_next_step(
    ray_session: ModuleType, probe: tuple[str, object]
) -> None:
    """A thread the step's tool left on the replica logs once the step is over: the
    record reaches the team's logging while the team is idle, not with the next step
    (there is none) nor only as the team stops."""
    name, handle = probe
    arrival = _Arrival("later said")
    logger = logging.getLogger("regiment.tests")
    logger.addHandler(arrival)
    try:
        async with logged_team(f"later {name}").start() as running:
            result = await running.run("later")
            assert result.status == "completed"
            assert arrival.records == []  # not made yet: the thread waits for the probe
            await handle.cancel.remote(0)  # type: ignore[attr-defined]  # it logs now
            with anyio.fail_after(60):  # (before the fix, only the team's stop brought it)
                await arrival.arrived.wait()
            (said,) = arrival.records
            assert said.process != os.getpid()
            assert (
                said.getMessage()
                == f"[Ray replica 0 of 'w', pid {said.process}] later said {name!r}"
            )
            assert (getattr(said, "step_id", None), said.worker) == (None, "w")  # type: ignore[attr-defined]
        assert len(arrival.records) == 1  # once: not again as the team stopped
    finally:
        logger.removeHandler(arrival)
