"""A local Ray that a team starts itself outlives the thread that started it.

A local Ray's head processes (the GCS server and the raylet) die with the
thread that forked them, so ``ray.init`` must not run on a pooled worker
thread, which anyio ends once it has idled. The check runs in a child process
with ``RAY_ADDRESS=local``: the team starts a Ray of its own there, never
joining the test session's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import os, time
import anyio, psutil
from anyio._backends._asyncio import WorkerThread
from tests.ray._ray_team import ray_refund_team

WorkerThread.MAX_IDLE_TIME = 0.5  # anyio ends pooled threads idle this long (10 s by default)
HEAD = ("gcs_server", "raylet")


def head_alive():
    kids = psutil.Process().children(recursive=True)
    found = {
        name: [k.status() != psutil.STATUS_ZOMBIE for k in kids if k.name().startswith(name)]
        for name in HEAD
    }
    return {name: bool(alive) and all(alive) for name, alive in found.items()}


async def main():
    team = ray_refund_team(os.environ["LEDGER"], num_cpus=0.5)
    async with team.start() as running:
        first = await running.run("For order 88213 check refund eligibility, then email the customer.")
        print("first", first.status, head_alive(), flush=True)
        async with anyio.create_task_group() as tg:  # more pooled threads, all then idle
            for _ in range(3):
                tg.start_soon(anyio.to_thread.run_sync, time.sleep, 0.2)
        await anyio.sleep(1.0)
        await anyio.to_thread.run_sync(time.sleep, 0)  # anyio prunes the idle threads now
        await anyio.sleep(0.5)
        print("after idle", head_alive(), flush=True)
        print("ray processes", " ".join(str(k.pid) for k in psutil.Process().children(True)))


anyio.run(main)
"""


def _run_child(tmp_path: Path) -> list[str]:
    env = dict(os.environ, RAY_ADDRESS="local", LEDGER=str(tmp_path / "ledger.jsonl"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_a_local_ray_the_team_started_survives_idle_pooled_threads(tmp_path: Path) -> None:
    lines = _run_child(tmp_path)
    alive = "{'gcs_server': True, 'raylet': True}"
    assert lines[:2] == [f"first completed {alive}", f"after idle {alive}"], lines


@pytest.mark.timeout(240)  # the child, then up to 90 s for its Ray to be reaped
def test_the_local_ray_the_team_started_is_gone_when_its_process_exits(tmp_path: Path) -> None:
    """Ray's own exit hook does not wait for the head it stops, and the head died with
    the process before it had stopped its agents: they lingered for a minute or two."""
    lines = _run_child(tmp_path)
    assert lines[2].startswith("ray processes "), lines
    pids = [int(pid) for pid in lines[2].split()[2:]]
    assert pids  # the GCS server, the raylet, its agents and workers
    # They lingered a minute or two; under load (the suite runs on xdist workers, and the
    # head's agents are stopped one by one) reaping them has taken over 40 s.
    deadline = time.monotonic() + 90.0
    while (left := [p for p in pids if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], [psutil.Process(p).name() for p in left if _running(p)]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
