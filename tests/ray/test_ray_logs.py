"""A Ray replica's ``regiment`` log records reach the team's process, as an in-process
worker's do: with the step's ``run_id``, ``step_id`` and ``worker``, the replica's
process id, and at the levels the team's process logs. They went to the replica's
log file on its Ray node, where nobody saw them (a tool's result cut to its limit,
say)."""

from __future__ import annotations

import logging
import os
from types import ModuleType

import pytest

from ._ray_logged import logged_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


def _from_replica(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.process != os.getpid()]


async def test_a_replicas_warnings_reach_the_teams_logging_with_their_step(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    team = logged_team("wordy 250", "noisy hello", "wordy 20")
    caplog.set_level(logging.WARNING)
    async with team.start() as running:
        runs = [await running.run(goal) for goal in ("first", "second", "third")]
    assert [r.status for r in runs] == ["completed"] * 3
    records = _from_replica(caplog)
    assert [(r.name, r.levelname) for r in records] == [
        ("regiment.tools", "WARNING"),  # the cut, in the step's task
        ("regiment.tests", "WARNING"),  # the sync tool's own, in the replica's thread
    ]
    cut, noisy = records
    assert cut.getMessage().startswith(
        "tool 'wordy': its result was 250 characters, over the limit of 100"
    )
    assert noisy.getMessage() == "noisy was told 'hello'"
    assert [(r.run_id, r.step_id, r.worker) for r in records] == [  # type: ignore[attr-defined]
        (runs[0].run_id, "s1", "w"),
        (runs[1].run_id, "s1", "w"),
    ]
    assert cut.processName == "ray::StepHost"
    assert cut.process == noisy.process  # the replica's
    assert (cut.funcName, noisy.funcName) == ("fitted", "noisy")  # where it was made


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
