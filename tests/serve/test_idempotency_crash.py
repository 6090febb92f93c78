"""A ``POST /runs?wait=true`` with an ``Idempotency-Key`` whose server is SIGKILLed after
the run was journaled and before it answered: the client's retry, to the restarted
service, answers that run (``stalled``, to resume) and starts nothing, on a real SQLite
file and a real PostgreSQL server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("keyed_child.py")
GOAL = {"goal": "charge order 7"}
KEY = {"Idempotency-Key": "charge-7-try"}


async def _child(journal: str, side: Path, *rest: str) -> tuple[Process, TextReceiveStream]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}  # (the tests' helpers, and regiment)
    process = await anyio.open_process(
        [sys.executable, str(CHILD), journal, str(side), *rest],
        env=env, stdin=subprocess.DEVNULL, stderr=None,
    )  # fmt: skip
    assert process.stdout is not None
    return process, TextReceiveStream(process.stdout)


async def _until(out: TextReceiveStream, said: str, seen: list[str]) -> str:
    """Read the child's output until it has said ``said``; the line it is on."""
    with anyio.fail_after(60):  # (a hang guard)
        while not any(said in line for line in "".join(seen).splitlines()):
            seen.append(await out.receive())
    return next(line for line in "".join(seen).splitlines() if said in line)


async def test_a_retry_after_a_kill_finds_the_journaled_run(journal: str, tmp_path: Path) -> None:
    side = tmp_path / "charges.txt"
    first, out = await _child(journal, side, "hang")
    seen: list[str] = []
    lost: list[BaseException] = []
    try:
        url = (await _until(out, "url ", seen)).split()[1]
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:

            async def post() -> None:
                try:
                    answer = await c.post("/runs?wait=true", json=GOAL, headers=KEY)
                except httpx.TransportError as exc:  # the server died under it
                    lost.append(exc)
                else:
                    pytest.fail(f"answered before the kill: {answer.text}")

            async with anyio.create_task_group() as tg:
                tg.start_soon(post)
                await _until(out, "in tool", seen)  # journaled, charged, not answered
                first.kill()
    finally:
        if first.returncode is None:
            first.kill()
        with anyio.fail_after(30):
            await first.wait()
    assert len(lost) == 1
    assert side.read_text() == "7\n"
    second, out = await _child(journal, side)
    try:
        url = (await _until(out, "url ", [])).split()[1]
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            retry = await c.post("/runs?wait=true", json=GOAL, headers=KEY)
            assert retry.status_code == 200, retry.text
            assert retry.headers["idempotent-replayed"] == "true"
            assert retry.json()["status"] == "stalled"  # its process died: resume it
            run_id = retry.json()["run_id"]
            listed = (await c.get("/runs")).json()["runs"]
            assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "stalled")]
            assert side.read_text() == "7\n"  # nothing ran again
            resumed = await c.post(f"/runs/{run_id}/resume?wait=true")
            assert resumed.json()["status"] == "completed", resumed.text
            again = await c.post("/runs?wait=true", json=GOAL, headers=KEY)
            assert (again.status_code, again.json()["run_id"]) == (200, run_id)
            assert again.json()["status"] == "completed"
            assert len((await c.get("/runs")).json()["runs"]) == 1
    finally:
        second.kill()
        with anyio.fail_after(30):
            await second.wait()
