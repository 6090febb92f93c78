"""The refund story on a two-node Ray cluster (started in a process of its own):
each worker on its node, one trace, side effects made on the nodes' processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..telemetry.otlp_receiver import OtlpReceiver
from ._ray_team import ledger_lines

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]  # a second Ray cluster starts

ROOT = Path(__file__).resolve().parents[2]


def test_refund_story_across_two_nodes(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.jsonl")
    # The caller's PYTHONPATH kept (as conftest's runtime_env does): the driver imports the
    # regiment under test, not whatever an installed copy points at.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    with OtlpReceiver() as receiver:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tests.ray._two_nodes", ledger, receiver.endpoint],
            capture_output=True,
            text=True,
            timeout=200,
            check=False,
            cwd=ROOT,
            env=env,
        )
        took = time.perf_counter() - began
        spans = receiver.spans()
    print(f"\ntwo-node cluster, start to stop: {took:.1f}s")  # for the lead's numbers
    assert done.returncode == 0, done.stderr[-3000:]
    told = json.loads(done.stdout.strip().splitlines()[-1])
    assert told["status"] == "completed"
    assert told["committed"] == ["s4", "s5"]  # s1: rejected by its check
    assert "could not be made" in told["answer"]
    nodes = told["nodes"]
    assert nodes.keys() == {"node_a", "node_b"}
    assert nodes["node_a"] != nodes["node_b"]
    made = {e["kind"]: e for e in ledger_lines(ledger)}
    assert made.keys() == {"exception", "email"}
    assert made["exception"]["node"] == nodes["node_a"]  # billing's replica
    assert made["email"]["node"] == nodes["node_b"]  # comms' replica
    assert all(e["pid"] != told["driver_pid"] for e in made.values())
    assert {s.trace_id for s in spans} == {told["trace_id"]}
    services = {s.resource["service.name"] for s in spans}
    assert services == {"planner-side", "regiment-ray:billing", "regiment-ray:comms"}
