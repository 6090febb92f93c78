"""A local Ray that a team starts itself outlives the thread that started it.

A local Ray's head processes (the GCS server and the raylet) die with the
thread that forked them, so ``ray.init`` must not run on a pooled worker
thread, which anyio ends once it has idled. The check runs in a child process
with ``RAY_ADDRESS=local``: the team starts a Ray of its own there, never
joining the test session's. They all end by the time that process has exited: at
its exit, or at a SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from tests.fresh_interpreter import run_fresh

from ._sigterm import running, sigterm_mid_step

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
    return run_fresh(_CHILD, cwd=ROOT, env=env, timeout=180).splitlines()


@pytest.mark.timeout(180)  # the child starts a Ray of its own
def test_a_local_ray_the_team_started_survives_idle_pooled_threads_and_ends_with_it(
    tmp_path: Path,
) -> None:
    """Ray's own exit hook does not wait for the head it stops, and the head died with
    the process before it had stopped its agents: they lingered for a minute or two.
    Ray's shutdown gives the raylet a second to stop what it started; under load its
    agents and workers outlived it by 40 s and more. All are gone by the process's exit."""
    lines = _run_child(tmp_path)
    alive = "{'gcs_server': True, 'raylet': True}"
    assert lines[:2] == [f"first completed {alive}", f"after idle {alive}"], lines
    assert lines[2].startswith("ray processes "), lines
    pids = [int(pid) for pid in lines[2].split()[2:]]
    assert len(pids) >= 4  # the GCS server, the raylet, its agents, the replicas' workers
    assert [psutil.Process(p).name() for p in pids if running(p)] == []


_HOLDING = """
import dataclasses, anyio
from regiment.hierarchy import Ray
from tests.ray._cluster_lost import _holder, brain
from regiment.hierarchy import Planner, Team
from regiment.models import ScriptedModel

holder = dataclasses.replace(
    _holder(), placement=Ray(build="tests.ray._cluster_lost:_holder", num_cpus=0)
)
team = Team(name="holding", planner=Planner(model=ScriptedModel(brain)), workers=[holder])


async def main():
    async with team.start() as running:
        await running.run("hold 88213")  # its tool holds on the replica till the SIGTERM


anyio.run(main)
"""


@pytest.mark.timeout(180)
def test_a_sigterm_ends_a_program_whose_team_started_ray_and_all_its_ray_processes(
    tmp_path: Path,
) -> None:
    """``ray.init`` on the main thread makes a SIGTERM exit the process (its exit hooks
    stop Ray); the team joins Ray on a thread of its own, where it did not: a SIGTERM
    killed the program outright, and its Ray's agents and replicas ran on for a minute."""
    ledger = tmp_path / "ledger.jsonl"
    env = dict(os.environ, RAY_ADDRESS="local", REGIMENT_TEST_LEDGER=str(ledger))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    stopped = sigterm_mid_step([sys.executable, "-c", _HOLDING], cwd=ROOT, env=env, ledger=ledger)
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert {"gcs_server", "raylet", "ray::StepHost"} <= stopped.started
    assert stopped.left == []


@pytest.mark.timeout(180)
def test_a_sigkilled_program_whose_team_started_ray_leaves_none_of_its_ray_processes(
    tmp_path: Path,
) -> None:
    """Killed outright, the program runs no exit hook: its head died with it, and the
    replica a moment later, but Ray's agents (``ray::DashboardAgent``,
    ``ray::RuntimeEnvAgent``) ran on, orphaned, holding their memory till stopped by
    hand (still there a minute later). The watchdog started with the local Ray ends them."""
    ledger = tmp_path / "ledger.jsonl"
    env = dict(os.environ, RAY_ADDRESS="local", REGIMENT_TEST_LEDGER=str(ledger))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-c", _HOLDING]
    # Bounded, not timed: an orphaned agent ran on for minutes (until killed by hand).
    stopped = sigterm_mid_step(
        argv, cwd=ROOT, env=env, ledger=ledger, sent=signal.SIGKILL, settle=30.0
    )
    assert stopped.returncode == -signal.SIGKILL
    assert {"gcs_server", "raylet", "ray::StepHost", "ray::DashboardAgent"} <= stopped.started
    assert stopped.left == []
