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

from ._ray_team import ledger_lines, ray_refund_team
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
