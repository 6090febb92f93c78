"""A team stopping while one of its replicas does not answer (its node frozen, or Ray
restarting it with a build that hangs): the stop asked it to stop its MCP servers, to
hand its log records over and to export its spans, and waited up to 15 s for nothing.
Now each replica has a short grace to answer; one that does not is killed at once, and
a WARNING says what went with it."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from types import ModuleType

import anyio
import psutil
import pytest

from regiment.hierarchy.workers._ray_stop import STOP_GRACE

from ._ray_team import where_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_replica_that_does_not_answer_is_killed_at_the_stop_saying_what_went_with_it(
    ray_session: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="regiment.ray")
    pid = 0
    try:
        async with where_team(num_cpus=0, replicas=2).start() as running:
            for _ in range(2):  # one step on each replica: both answer
                result = await running.run("where do you run?")
                assert result.status == "completed", result.events
            pid = int(result.steps[0].output.partition("@")[0])  # the second replica's
            os.kill(pid, signal.SIGSTOP)  # frozen: it never answers, and Ray cannot tell
            frozen = psutil.Process(pid)
            # The stop lands as the kernel next takes the process off its CPU: a read just
            # after the signal may still say "running" (CI saw it once).
            with anyio.fail_after(30):  # a hang guard
                await _stopped(frozen)
    finally:
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    stopped = [r for r in caplog.records if "as the team stopped" in r.getMessage()]
    assert [(r.levelname, r.worker, r.getMessage()) for r in stopped] == [  # type: ignore[attr-defined]
        (
            "WARNING",
            "where",
            f"Ray replica 1 of 'where' did not answer within {STOP_GRACE:g} s as the team "
            "stopped (no answer): it was killed at once, and with it went the log records it "
            "made since its last step (see its Ray log files), the spans it had not exported "
            "yet, and the clean stop of its MCP servers, if it had any (their watchdogs end them)",
        )
    ]  # replica 0 answered: stopped as before, nothing said of it


async def _stopped(process: psutil.Process) -> None:
    """Until ``process`` is stopped (a SIGSTOP sent to it has landed)."""
    # (no event says a signal landed: the kernel's state is read until it does)
    while process.status() != psutil.STATUS_STOPPED:  # noqa: ASYNC110
        await anyio.sleep(0.01)
