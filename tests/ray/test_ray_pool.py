"""Several workers in one Ray pool: one set of replicas hosts them all, routes each
step to its worker, and the refund story ends as it does in-process."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.models import ScriptedModel

from ._ray_team import ledger_lines, pooled_holders, ray_refund_team
from .test_ray_refund import _story

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_two_workers_in_one_pool_share_one_replica_process(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    local = await build_team(ScriptedModel(refund_brain), Ledger()).run(GOAL)
    ledger = str(tmp_path / "ledger.jsonl")
    team = ray_refund_team(ledger, pool="cpu", replicas=1, num_cpus=0.5)
    remote = await team.run(GOAL)

    assert remote.status == local.status == "completed"
    assert remote.answer == local.answer
    assert remote.committed == local.committed
    assert _story(remote) == _story(local)
    assert remote.tool_calls == local.tool_calls
    effects = ledger_lines(ledger)
    # billing flagged the exception, comms sent the e-mail: both from the pool's one replica
    assert [(e["kind"]) for e in effects] == ["exception", "email"]
    (pid,) = {e["pid"] for e in effects}
    assert pid != os.getpid()


async def test_a_pool_replica_runs_the_steps_of_all_its_workers_at_once(
    probe: tuple[str, object],
) -> None:
    """A replica's concurrency is the sum of its workers' (3 + 3 here): six held
    steps run on the pool's one replica together (one worker's 3, plus the room
    for control calls, would leave a step waiting, and this test would time out)."""
    name, handle = probe
    team = pooled_holders(name, 3, pool="holders", num_cpus=0)
    async with team.start() as running:
        async with running.stream("hold order 88213 six times"):
            started = await handle.wait_started.remote(6)  # type: ignore[attr-defined]
        # leaving the block cancelled the run, and its six remote steps with it
        assert running.active_runs == 0
    assert len(started) == 6
    assert len(set(started)) == 1  # all in the pool's one replica process
    assert set(started) != {os.getpid()}
