"""Team files on Ray: ``[workers.placement] kind = "ray"`` and ``regiment run --workers ray``.
The replicas build the workers from the file itself (its tools write to their own
process's ledger, so the test process's ledger stays empty)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from examples.refund.team import GOAL
from examples.refund.tools import LEDGER
from regiment.config import load_team
from regiment.hierarchy import Ray, Worker

from ..telemetry.otlp_receiver import OtlpReceiver
from ._cluster_lost import LEDGER as HOLD_LEDGER
from ._cluster_lost import team_file
from ._sigterm import sigterm_mid_step

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

REPO = Path(__file__).resolve().parents[2]
REFUND = REPO / "examples" / "refund" / "team.toml"


def _run_on_ray(address: str, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``regiment run`` of the refund team, its workers on the Ray at ``address``."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-m", "regiment", "run", str(REFUND), GOAL, "--model", "scripted"]
    with tempfile.TemporaryDirectory() as folder:  # its journal: not the repository's
        journal = str(Path(folder) / "journal.db")
        return subprocess.run(
            [*argv, "--workers", "ray", "--ray-address", address, *options],
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
            cwd=REPO,
            env={
                **os.environ,
                "RAY_AUTH_MODE": "token",
                "PYTHONPATH": path,
                "REGIMENT_JOURNAL": journal,
                **env,
            },
        )


def _placed_file(directory: Path) -> Path:
    text = REFUND.read_text()
    placed = text.replace(
        'tools = ["examples.refund.tools:email_customer"]\n',
        'tools = ["examples.refund.tools:email_customer"]\n\n'
        '[workers.placement]\nkind = "ray"\nnum_cpus = 0\nreplicas = 2\n',
    )
    assert placed != text
    path = directory / "team.toml"
    path.write_text(placed)
    return path


async def test_a_team_file_places_a_worker_on_ray(ray_session: ModuleType, tmp_path: Path) -> None:
    team = load_team(_placed_file(tmp_path), model="scripted")
    billing, comms = team.workers
    assert isinstance(billing, Worker)
    assert billing.placement is None
    assert isinstance(comms, Worker)
    assert isinstance(comms.placement, Ray)
    assert comms.placement.replicas == 2
    emails_before = len(LEDGER.emails)
    result = await team.run(GOAL)
    assert result.status == "completed"
    assert result.committed == ("s4", "s5")
    assert result.rejected == ("s1",)
    assert "could not be made" in result.answer
    assert len(LEDGER.emails) == emails_before  # the e-mail went out from a replica
    assert LEDGER.exceptions[-1:] == ["88213"]  # billing stayed in this process


def test_regiment_run_workers_ray_joins_a_cluster_by_address(ray_session: ModuleType) -> None:
    address = ray_session.get_runtime_context().gcs_address
    done = _run_on_ray(address, "--events", "jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    kinds = [json.loads(line)["type"] for line in lines if line.startswith("{")]
    assert kinds.count("StepCompleted") == 2  # s4, s5 (s1 failed its check)
    assert "could not be made" in done.stdout
    assert f"Connecting to existing Ray cluster at address: {address}" in done.stderr


def test_regiment_run_trace_jaeger_sends_the_replicas_spans_too(ray_session: ModuleType) -> None:
    """The command's collector is the replicas' too: the session's Ray knows no
    OTLP endpoint of its own, so before, the steps' model and tool spans were lost."""
    address = ray_session.get_runtime_context().gcs_address
    with OtlpReceiver() as receiver:
        endpoint = receiver.endpoint.removesuffix("/v1/traces")
        done = _run_on_ray(address, "--trace", "jaeger", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
        spans = receiver.spans()
    assert done.returncode == 0, done.stderr[-3000:]
    (root,) = [s for s in spans if s.name == "invoke_agent refunds"]
    in_run = sorted(s.name for s in spans if s.trace_id == root.trace_id)
    tools = [n for n in in_run if n.startswith("execute_tool")]
    assert tools == [
        "execute_tool check_eligibility",
        "execute_tool email_customer",
        "execute_tool flag_exception",
    ]
    assert in_run.count("chat scripted") == 9  # plan, replan, synthesis and six worker calls
    # The progress lines count a step's tokens from this process's spans; a Ray step
    # has none here, so its line shows no count (it said "0 tokens").
    assert re.search(r"<- s4 done by billing, \d+ tokens: Done: ", done.stderr)


def test_workers_ray_under_trio_is_a_usage_error() -> None:
    argv = [sys.executable, "-m", "regiment", "run", str(REFUND), GOAL, "--model", "scripted"]
    done = subprocess.run(
        [*argv, "--workers", "ray", "--backend", "trio"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "regiment: error: --workers ray needs --backend asyncio (the default; Ray has no "
        "trio); see `regiment run --help`"
    )


def test_regiment_run_workers_ray_at_an_address_nothing_answers_is_a_usage_error(
    refused_port: int,
) -> None:
    # ray.init waited minutes for a GCS that is not there: a cluster not started yet, or
    # the resume of a run whose cluster went away, started before the cluster was back.
    port = refused_port  # held bound, never listened on: nothing answers there
    done = _run_on_ray(f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines()[-1] == (
        f"regiment: error: cannot join the Ray cluster at '127.0.0.1:{port}': nothing answers "
        f"there (Connection refused); start the cluster (`ray start --head --port={port}` on "
        "its head node), or check the address"
    )


@pytest.mark.parametrize(
    ("address", "why"),
    [("foo", "Invalid address format: foo"), ("", "Invalid address format:")],
)
def test_regiment_run_workers_ray_at_an_address_ray_cannot_read_is_a_usage_error(
    address: str, why: str
) -> None:
    # Ray's ValueError came out as a traceback, exit 1.
    done = _run_on_ray(address)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines()[-1] == (
        f"regiment: error: cannot join the Ray cluster at {address!r}: {why}; give the GCS "
        "address of the cluster's head as host:port (the one `ray start --head` prints), or "
        "no address for a local Ray"
    )
    assert "Traceback" not in done.stderr


def test_a_sigterm_stops_regiment_run_workers_ray_quietly_leaving_no_ray_process(
    tmp_path: Path,
) -> None:
    """On a local Ray of the command's own: a SIGTERM mid-step stops it as Ctrl-C does,
    and none of that Ray's processes outlives it. Ray's driver put a crash reporter in
    front of the command's SIGTERM handler: a clean stop printed a stack dump
    ("*** SIGTERM received at time=...") to stderr."""
    ledger = tmp_path / "ledger.jsonl"
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-m", "regiment", "run", str(team_file(tmp_path)), "hold 88213"]
    env = {**os.environ, "RAY_ADDRESS": "local", "PYTHONPATH": path, HOLD_LEDGER: str(ledger)}
    env["REGIMENT_JOURNAL"] = str(tmp_path / "journal.db")  # not the repository's
    stopped = sigterm_mid_step([*argv, "--workers", "ray"], cwd=REPO, env=env, ledger=ledger)
    stderr = stopped.stderr
    assert stopped.returncode == 143, stderr[-3000:]
    assert stderr.splitlines()[-1].startswith("regiment: interrupted; cancelled the run")
    assert "SIGTERM received" not in stderr
    assert "SIGTERM handler is not set" not in stderr  # Ray's note: the command has one
    assert {"gcs_server", "raylet", "ray::StepHost"} <= stopped.started
    assert stopped.left == []
