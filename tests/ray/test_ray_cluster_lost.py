"""The whole Ray cluster goes away mid-step (its head's processes sent SIGTERM, as
``ray stop`` does): the run stops at once, spending no replan against a cluster that
is gone, unfinished in its journal, with a message saying how to go on; a resume
(here in-process) finishes it, running the tool call that was in flight once more
under its same key, and its side effect happens once.

The cluster is one of the test's own (``ray start --head`` in a temporary
directory), run by a driver process of its own: the session's Ray stays untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ._cluster_lost import holding_team, ledger

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
_RAY = Path(sys.executable).with_name("ray")


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    # A cluster of the test's own, joined without a token (RAY_ADDRESS must not steer it).
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return env | {"PYTHONPATH": path, "RAY_AUTH_MODE": "disabled"}


def _pids(marker: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split() if int(pid) != os.getpid()]


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@pytest.fixture
def own_cluster() -> Iterator[tuple[str, str]]:
    """A one-node Ray of this test's own: its GCS address and its temporary directory
    (every head process names it; the test stops them, and this ends what is left)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="rg-lost-")  # short: Ray's socket paths must stay short
    command = [str(_RAY), "start", "--head", f"--port={port}", "--num-cpus=1"]
    command += ["--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"]
    subprocess.run(command, env=_env(), check=True, capture_output=True, timeout=120)
    try:
        yield f"127.0.0.1:{port}", temp
    finally:
        _signal(_pids(temp), signal.SIGKILL)


def _run_until_lost(address: str, temp: str, journal: str, path: str) -> tuple[str, str]:
    """Run the goal in a driver process on the cluster, stop the cluster once the step's
    tool runs there, and return what the driver printed and logged."""
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.ray._cluster_lost", address, journal, path],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    replica: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while not (asked := [line for line in ledger(path) if "asked" in line]):
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "the step never started on the cluster"
            time.sleep(0.2)
        replica = [asked[0]["pid"]]
        assert asked[0]["on_ray"] is True
        _signal([*_pids(temp), *replica], signal.SIGTERM)  # what `ray stop` sends
        out, err = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
        _signal(replica, signal.SIGKILL)
    assert driver.returncode == 0, err
    return out, err


async def test_a_run_whose_cluster_went_away_stops_resumably_and_resumes(
    own_cluster: tuple[str, str], tmp_path: Path
) -> None:
    address, temp = own_cluster
    journal, path = str(tmp_path / "runs.db"), str(tmp_path / "ledger.jsonl")
    out, err = await anyio.to_thread.run_sync(_run_until_lost, address, temp, journal, path)
    ended = json.loads(out.splitlines()[-1])
    run_id = ended["run_id"]
    assert ended["error_type"] == "ClusterLost"
    port = address.rpartition(":")[2]  # (Ray names the node's address, not 127.0.0.1)
    assert re.search(rf"the Ray cluster at \S+:{port} went away mid-step", ended["message"])
    assert f"`regiment resume {run_id}`" in ended["message"]
    events = ended["events"]
    assert "Replanned" not in events  # no replan spent on a cluster that is gone
    assert (events.count("PlanCreated"), events.count("StepDispatched")) == (1, 1)
    assert events.count("StepErrored") == 1
    assert "the Ray cluster at" in err  # logged too: nobody may be reading the events

    async with holding_team(path).start(journal=journal) as running:
        assert running.journal is not None
        before = await running.journal.get_run(run_id)
        assert before.status == "stalled"  # unfinished: not journaled as failed
        result = await running.resume(run_id)
    assert result.status == "completed"
    assert result.answer.startswith("order 88213 is held")
    asks = [line["asked"] for line in ledger(path) if "asked" in line]
    assert len(asks) == 2  # once more after the resume,
    assert len(set(asks)) == 1  # under the same key
    assert [line["performed"] for line in ledger(path) if "performed" in line] == [asks[0]]
