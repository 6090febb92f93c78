"""50 goals posted at once to ``regiment serve`` on a journal, the server SIGKILLed while
they run, started again: every run is listed, each one finished or resumable (a resume
finishes it), none lost or twice; each side effect happened once per idempotency key,
and ``GET /runs`` lists what ``regiment runs`` does."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from anyio.abc import Process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]  # 50 runs, two servers

ROOT = Path(__file__).resolve().parents[2]
TORTURE = ROOT / "bench" / "torture"
GOALS = 50
_LISTENING = re.compile(r"Uvicorn running on (http://[^\s:]+:\d+)")


async def _serve(journal: Path, log: Path, env: dict[str, str]) -> tuple[Process, str]:
    args = ["serve", str(TORTURE / "team.toml"), "--journal", str(journal), "--port", "0"]
    with log.open("w") as out:  # (the child writes it: this process only reads it)
        process = await anyio.open_process(
            [sys.executable, "-m", "regiment", *args, "--app-dir", str(TORTURE)],
            env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    with anyio.fail_after(60):  # (a hang guard)
        while True:
            text = await anyio.Path(log).read_text()
            if (found := _LISTENING.search(text)) is not None:
                return process, found[1]
            assert process.returncode is None, text
            await anyio.sleep(0.02)


async def _end(process: Process) -> None:
    if process.returncode is None:
        process.kill()
    with anyio.fail_after(30):
        await process.wait()


async def _listed(c: httpx.AsyncClient) -> dict[str, str]:
    runs = (await c.get("/runs", params={"limit": 500})).json()["runs"]
    return {run["run_id"]: run["status"] for run in runs}


async def test_a_burst_of_runs_survives_a_kill_of_its_server(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "TORTURE_LEDGER": str(tmp_path)}
    accepted: list[str] = []
    first, url = await _serve(journal, tmp_path / "serve1.log", env)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:

            async def post(i: int) -> None:
                answer = await c.post("/runs", json={"goal": f"settle the accounts #{i}"})
                assert answer.status_code == 202, answer.text
                accepted.append(answer.json()["run_id"])

            async with anyio.create_task_group() as tg:
                for i in range(GOALS):
                    tg.start_soon(post, i)
            with anyio.fail_after(120):  # the kill comes once some have ended, not all
                while True:
                    if list((await _listed(c)).values()).count("completed") >= GOALS // 5:
                        break
                    await anyio.sleep(0.02)
            first.send_signal(signal.SIGKILL)
    finally:
        await _end(first)
    second, url = await _serve(journal, tmp_path / "serve2.log", env)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=120) as c:
            before = await _listed(c)
            assert sorted(before) == sorted(accepted)  # every run, once
            assert set(before.values()) <= {"completed", "stalled"}, before
            assert "stalled" in before.values()  # (the kill came mid-way)

            async def resume(run_id: str) -> None:
                answer = await c.post(f"/runs/{run_id}/resume", params={"wait": "true"})
                assert answer.status_code == 200, answer.text

            async with anyio.create_task_group() as tg:
                for run_id, status in before.items():
                    if status == "stalled":
                        tg.start_soon(resume, run_id)
            after = await _listed(c)
    finally:
        second.send_signal(signal.SIGTERM)
        with anyio.fail_after(60):
            await second.wait()
        await _end(second)
    assert collections.Counter(after.values()) == {"completed": GOALS}
    with anyio.fail_after(60):
        listed = await anyio.run_process(
            [sys.executable, "-m", "regiment", "runs", "--journal", str(journal), "--json"],
            env=env,
        )
    cli = {r["run_id"]: r["status"] for r in map(json.loads, listed.stdout.splitlines())}
    assert cli == after
    ledger = await anyio.Path(tmp_path / "effects.jsonl").read_text()
    effects = [json.loads(line) for line in ledger.splitlines()]
    keys = collections.Counter(str(effect[0]) for effect in effects)
    assert [key for key, n in keys.items() if n > 1] == []  # once per key
    charged = collections.Counter(k.split("/")[0] for k in keys if k.startswith("run-"))
    assert charged == dict.fromkeys(accepted, 6)  # each run's six charges
