"""Many runs at once on one team whose worker has two Ray replicas."""

from __future__ import annotations

import os
import time
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy import RunResult

from ._ray_team import where_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

RUNS = 200


async def test_200_concurrent_runs_share_two_replicas(ray_session: ModuleType) -> None:
    team = where_team(replicas=2, num_cpus=0)
    results: list[RunResult] = []
    async with team.start() as running:
        began = time.perf_counter()

        async def one(index: int) -> None:
            results.append(await running.run(f"run {index}: say where you run"))

        async with anyio.create_task_group() as tg:
            for index in range(RUNS):
                tg.start_soon(one, index)
        took = time.perf_counter() - began
    print(f"\n{RUNS} concurrent runs on 2 replicas: {took:.2f}s")  # for the lead's numbers
    assert len(results) == RUNS
    assert all(r.status == "completed" and r.committed == ("s1",) for r in results)
    where = {r.steps[0].output for r in results}
    pids = {int(w.split("@")[0]) for w in where}
    assert len(pids) == 2  # both replicas served steps
    assert os.getpid() not in pids
