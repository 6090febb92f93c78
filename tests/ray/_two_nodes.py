"""Run the refund story on a two-node ``ray.cluster_utils.Cluster`` started here,
billing's replica on one node and comms' on the other; print what happened as JSON.

Run as ``python -m tests.ray._two_nodes LEDGER OTLP_ENDPOINT`` (its own process: a
process joins one Ray cluster, and the test session's is another one).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from examples.refund.team import GOAL
from regiment.hierarchy import Ray, Worker
from regiment.telemetry import Telemetry, configure_tracing

from ._ray_team import ray_refund_team, refund_worker

ROOT = Path(__file__).resolve().parents[2]


async def _story(ledger: str, endpoint: str) -> dict[str, object]:
    tracing = configure_tracing("planner-side", endpoint=endpoint, set_global=False)
    team = ray_refund_team(ledger)
    workers = []
    for worker, node in zip(team.workers, ("node_a", "node_b"), strict=True):
        assert isinstance(worker, Worker)
        ray = Ray(
            build=functools.partial(refund_worker, worker.name, ledger),
            num_cpus=0,
            resources={node: 1.0},
            otlp_endpoint=endpoint,
        )
        workers.append(dataclasses.replace(worker, placement=ray))
    team = dataclasses.replace(team, workers=workers, telemetry=Telemetry(tracing.provider))
    result = await team.run(GOAL)
    tracing.shutdown()
    return {
        "status": result.status,
        "answer": result.answer,
        "committed": list(result.committed),
        "trace_id": result.trace_id,
        "driver_pid": os.getpid(),
    }


def main(ledger: str, endpoint: str) -> None:
    from ray.cluster_utils import Cluster

    ray: Any = importlib.import_module("ray")  # untyped in places; used as Any

    cluster: Any = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"node_a": 1.0}, "include_dashboard": False},
    )
    paths = (str(ROOT), os.environ.get("PYTHONPATH", ""))
    try:
        cluster.add_node(num_cpus=1, resources={"node_b": 1.0})
        ray.init(
            address=cluster.address,
            log_to_driver=False,
            # as the caller has it (its PYTHONPATH may put another regiment first)
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, paths))}},
        )
        nodes = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
        told = anyio.run(_story, ledger, endpoint, backend="asyncio")
        told["nodes"] = {
            name: node
            for node, res in nodes.items()
            for name in ("node_a", "node_b")
            if name in res
        }
        print(json.dumps(told))
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
