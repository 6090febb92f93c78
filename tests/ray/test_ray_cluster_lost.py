"""The whole Ray cluster goes away mid-step (its head's processes sent SIGTERM, as
``ray stop`` does), under two runs at once: ``regiment run --workers ray`` of a team
file, and a nested team (a ``TeamWorker`` whose child team's worker is on Ray) run by
a service (``create_app`` under uvicorn). Each run stops at once, spending no replan
against a cluster that is gone, unfinished in its journal, with a message saying how
to go on; the command exits 5 (stopped, resumable), the service lists its run
``stalled`` as the journal does, and the driver that ran the nested team has
disconnected from Ray (Ray's client would end it a minute later). A resume (here
in-process) finishes each, running the tool call that was in flight once more under
its same key, and its side effect happens once.

The cluster is one of the test's own (``ray start --head`` in a temporary
directory), run by driver processes of their own: the session's Ray stays untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from regiment.config import load_team

from ._cluster_lost import FLAT, HERE, LEDGER, NESTED, front_team, ledger, team_file

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
_RAY = Path(sys.executable).with_name("ray")


def _env(ledger_path: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    # A cluster of the test's own, joined without a token (RAY_ADDRESS must not steer it).
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", HERE)}
    return env | {"PYTHONPATH": path, "RAY_AUTH_MODE": "disabled", LEDGER: ledger_path}


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
    (every head process names it; the test stops them, and this ends what is left).
    Its ledger is in that directory."""
    temp = tempfile.mkdtemp(prefix="rg-lost-")  # short: Ray's socket paths must stay short
    # --port=0: the GCS takes a free port itself and `ray start` names it (a port bound
    # and closed here first could be taken meanwhile by another test's server).
    command = [str(_RAY), "start", "--head", "--port=0", "--num-cpus=1"]
    command += ["--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"]
    env = _env(f"{temp}/ledger.jsonl")
    started = subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    named = re.search(r"ray start --address='\S+:(\d+)'", started.stdout.decode())
    assert named, started.stdout.decode()[-3000:] + started.stderr.decode()[-3000:]
    port = int(named[1])
    try:
        yield f"127.0.0.1:{port}", temp
    finally:
        _signal(_pids(temp), signal.SIGKILL)


def _drivers(address: str, temp: str, tmp: Path) -> list[subprocess.Popen[str]]:
    """``regiment run`` of the team file, and the nested team's driver, on the cluster."""
    journal = str(tmp / "runs.db")
    run = [sys.executable, "-m", "regiment", "run", str(team_file(tmp)), f"hold {FLAT}"]
    run += ["--workers", "ray", "--ray-address", address, "--journal", journal]
    nested = [sys.executable, "-m", "tests.ray._cluster_lost", address, journal]
    env = _env(f"{temp}/ledger.jsonl")
    return [
        subprocess.Popen(
            [*argv, *(["--events", "jsonl"] if argv is run else [])],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in (run, nested)
    ]


def _run_until_lost(address: str, temp: str, tmp: Path) -> list[tuple[int, str, str]]:
    """Run both goals on the cluster, stop the cluster once both steps' tools run
    there, and return each driver's exit code, and what it printed and logged."""
    drivers = _drivers(address, temp, tmp)
    replicas: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while (
            len(asked := [line for line in ledger(f"{temp}/ledger.jsonl") if "asked" in line]) < 2
        ):
            for driver in drivers:
                assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "the steps never started on the cluster"
            time.sleep(0.2)
        assert {line["order"] for line in asked} == {FLAT, NESTED}
        assert all(line["on_ray"] for line in asked)
        replicas = [line["pid"] for line in asked]
        _signal([*_pids(temp), *replicas], signal.SIGTERM)  # what `ray stop` sends
        ended = [(*driver.communicate(timeout=120), driver.returncode) for driver in drivers]
    finally:
        for driver in drivers:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
        _signal(replicas, signal.SIGKILL)
    return [(code, out, err) for out, err, code in ended]


async def test_runs_whose_cluster_went_away_stop_resumably_and_resume(
    own_cluster: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, temp = own_cluster
    path = f"{temp}/ledger.jsonl"
    monkeypatch.setenv(LEDGER, path)
    monkeypatch.setenv(HERE, "1")  # this process's `hold` answers, even with Ray joined
    (code, out, err), (nested_code, nested_out, nested_err) = await anyio.to_thread.run_sync(
        _run_until_lost, address, temp, tmp_path
    )
    port = address.rpartition(":")[2]  # (Ray names the node's address, not 127.0.0.1)
    went = rf"the Ray cluster at \S+:{port} went away mid-step"

    events = [json.loads(line) for line in out.splitlines()]
    ended, run_id = events[-1], events[-1]["run_id"]
    assert code == 5, err  # stopped, resumable
    assert (ended["type"], ended["error_type"]) == ("RunFailed", "ClusterLost")
    last = err.splitlines()[-1]
    assert re.match(
        rf"regiment: run stopped, resumable: ClusterLost: step s1: worker 'holder': {went}", last
    )
    assert f"`regiment resume --journal {tmp_path / 'runs.db'} {run_id}`" in last  # typeable
    types = [event["type"] for event in events]
    assert "Replanned" not in types  # no replan spent on a cluster that is gone
    assert (types.count("PlanCreated"), types.count("StepDispatched")) == (1, 1)
    assert types.count("StepErrored") == 1

    assert nested_code == 0, nested_err
    nested = json.loads(nested_out.splitlines()[-1])
    assert nested["error_type"] == "ClusterLost"
    assert re.search(rf"step s1: team 'holding': worker 'holder': {went}", nested["message"])
    # how to resume, from code and typed anywhere (it said `regiment resume RUN`, no journal)
    nested_id, runs_db = nested["run_id"], tmp_path / "runs.db"
    assert f"running.resume({nested_id!r}) on a team started with that journal" in nested["message"]
    assert f"`regiment resume --journal {runs_db} {nested_id}`" in nested["message"]
    assert "Replanned" not in nested["events"]
    assert nested["joined"] is False  # disconnected: Ray's client will not end the process
    assert "the Ray cluster at" in nested_err  # logged too: nobody may be reading the events
    assert nested["status"] == "stalled"  # the service lists it as its journal does

    journal = str(tmp_path / "runs.db")
    async with load_team(team_file(tmp_path)).start(journal=journal) as running:
        assert running.journal is not None
        before = await running.journal.get_run(run_id)
        assert before.status == "stalled"  # unfinished: not journaled as failed
        result = await running.resume(run_id)
    assert result.status == "completed"
    assert result.answer == f"order {FLAT} is held"
    async with front_team().start(journal=journal) as running:
        assert running.journal is not None
        before = await running.journal.get_run(nested["run_id"])
        assert before.status == "stalled"
        nested_result = await running.resume(nested["run_id"])
    assert nested_result.status == "completed"
    assert nested_result.answer == f"order {NESTED} is held, says the desk"
    for order in (FLAT, NESTED):
        asks = [line["asked"] for line in ledger(path) if line.get("order") == order]
        assert len(asks) == 2  # once more after the resume,
        assert len(set(asks)) == 1  # under the same key
        performed = [line["performed"] for line in ledger(path) if "performed" in line]
        assert performed.count(asks[0]) == 1
