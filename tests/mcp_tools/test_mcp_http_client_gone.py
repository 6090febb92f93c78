"""``regiment mcp --http`` under concurrent calls: a call its client cancels, or whose
client goes away before the answer (its connection dropped), ends its run ``cancelled``
with no model call after that; the other calls complete; nothing is left running.

A client that went away used to leave its run working for nobody: it ran to its end,
making its model calls (paid for) and journaling an answer no one could read (the
server keeps no event store, so the call's stream cannot be resumed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from regiment.journal import open_journal
from tests.models import chat_api
from tests.models.standin import Reply, StandIn, serve

from .conftest import SDK_HTTP_LEAKS, die_with_parent, stop
from .test_mcp_http_stop import _initialized
from .test_mcp_serve_pause import text_of

# The server is a subprocess on asyncio whichever loop the client uses: one is enough.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("anyio_backend", ["asyncio"]),
    *SDK_HTTP_LEAKS,
]

# Plans one step per goal; a worker works until cancelled unless its goal says "done". Every
# model call is written down (role and goal), so a call after a cancel shows.
BRAIN = """
import json, re
import anyio

CALLS = {calls!r}

async def brain(request):
    text = " ".join(getattr(p, "text", "") for m in request.messages for p in m.parts)
    goal = re.search(r"goal-[a-z]+-[0-9]+", text).group(0)
    with open(CALLS, "a", encoding="utf-8") as calls:
        calls.write(f"{{request.role}} {{goal}}\\n")
    if request.role in ("planner", "replanner"):
        return json.dumps({{"steps": [{{"description": f"work on {{goal}}"}}]}})
    if request.role == "worker" and "done" not in goal:
        await anyio.sleep_forever()
    return f"answer for {{goal}}"
"""


def _serving(tmp_path: Path, team: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """``regiment mcp --http`` of ``team`` (a team file's text), journaled; its URL."""
    (tmp_path / "team.toml").write_text(team, encoding="utf-8")
    argv = ["mcp", "team.toml", "--app-dir", str(tmp_path), "--http", "0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "regiment", *argv, "--journal", str(tmp_path / "runs.db")],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
        preexec_fn=die_with_parent,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # printed once the socket listens
    assert " at http://127.0.0.1:" in line, line
    return process, line.split(" at ")[1].strip()


async def _ended(process: subprocess.Popen[str]) -> str:
    """SIGTERM, and what it wrote to stderr; it must exit 0."""
    process.send_signal(signal.SIGTERM)
    code = await anyio.to_thread.run_sync(process.wait)
    assert process.stderr is not None
    said = process.stderr.read()
    assert code == 0, said
    assert "Traceback" not in said
    return said


async def _statuses(tmp_path: Path) -> dict[str, str | None]:
    opened = await open_journal(str(tmp_path / "runs.db"))
    try:
        return {r.goal: r.status for r in await opened.list_runs()}
    finally:
        await opened.close()


async def _until(tmp_path: Path, wanted: dict[str, str]) -> None:
    with anyio.fail_after(20):
        while {g: s for g, s in (await _statuses(tmp_path)).items() if g in wanted} != wanted:  # noqa: ASYNC110 - no event from another process
            await anyio.sleep(0.1)


async def _leave_mid_call(url: str, goal: str, working: anyio.Event) -> None:
    """A client that sends ``run(goal)``, reads its first progress, waits for ``working``,
    and drops the connection (no cancel, no session end): as a client that crashed."""
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = await _initialized(http, url)
        headers["accept"] = "application/json, text/event-stream"
        params = {"name": "run", "arguments": {"goal": goal}, "_meta": {"progressToken": 1}}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        async with http.stream("POST", url, json=call, headers=headers) as response:
            assert response.status_code == 200
            async for _ in response.aiter_bytes():
                break  # the plan's progress: the run is on
            await working.wait()


async def test_a_client_that_drops_its_call_cancels_its_run_and_its_model_call(
    tmp_path: Path,
) -> None:
    team = """
name = "t"
model = "openai-compatible:gpt-test-1"

[providers.openai]
max_retries = 0

[[workers]]
name = "w"
description = "works"
"""
    async for api in serve(chat_api.error(500, "server_error", "not queued")):
        plan = {"steps": [{"description": "work"}]}
        api.queue(chat_api.completion(json.dumps(plan)), Reply(200, {}, hold=True))
        env = {"OPENAI_BASE_URL": f"{api.base_url}/v1", "OPENAI_API_KEY": "k"}
        process, url = _serving(tmp_path, team, env)
        try:
            working = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_leave_mid_call, url, "goal-gone-1", working)
                await _requests(api, 2)  # the plan, and the worker's call, which waits
                working.set()
            await _until(tmp_path, {"goal-gone-1": "cancelled"})
            await _ended(process)
        finally:
            stop(process)
        assert len(api.requests) == 2  # none after: no step's end, no synthesis


async def _requests(api: StandIn, count: int) -> None:
    with anyio.fail_after(20):
        while len(api.requests) < count:
            api.received = anyio.Event()  # set by the next request
            await api.received.wait()


async def test_concurrent_calls_some_cancelled_some_dropped_the_rest_complete(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls.txt"
    module = f"gone_brain_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(BRAIN.format(calls=str(calls)), encoding="utf-8")
    team = f'name = "t"\nmodel = "scripted"\nbrain = "{module}:brain"\n\n'
    team += '[[workers]]\nname = "w"\ndescription = "works"\n'
    process, url = _serving(tmp_path, team, {})
    answers: dict[str, str] = {}

    def working(goal: str) -> bool:
        return calls.exists() and f"worker {goal}\n" in calls.read_text(encoding="utf-8")

    async def wait_working(goal: str) -> None:
        with anyio.fail_after(20):
            while not working(goal):  # noqa: ASYNC110 - the server's file: no event
                await anyio.sleep(0.05)

    try:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
            anyio.create_task_group() as tg,
        ):
            await session.initialize()

            async def run(goal: str) -> None:
                answers[goal] = text_of(await session.call_tool("run", {"goal": goal}))

            async def cancelled(goal: str) -> None:
                async with anyio.create_task_group() as mine:
                    mine.start_soon(run, goal)
                    await wait_working(goal)
                    mine.cancel_scope.cancel()  # the SDK sends notifications/cancelled

            for number in range(10):
                tg.start_soon(run, f"goal-done-{number}")
                tg.start_soon(cancelled, f"goal-hold-{number}")

            async def gone(goal: str) -> None:
                dropped = anyio.Event()
                async with anyio.create_task_group() as mine:
                    mine.start_soon(_leave_mid_call, url, goal, dropped)
                    await wait_working(goal)
                    dropped.set()  # the client drops its connection

            for number in range(2):
                tg.start_soon(gone, f"goal-gone-{number}")
        wanted = {f"goal-hold-{n}": "cancelled" for n in range(10)}
        wanted |= {f"goal-gone-{n}": "cancelled" for n in range(2)}
        wanted |= {f"goal-done-{n}": "completed" for n in range(10)}
        await _until(tmp_path, wanted)
        await _ended(process)
    finally:
        stop(process)
    assert answers == {f"goal-done-{n}": f"answer for goal-done-{n}" for n in range(10)}
    made = calls.read_text(encoding="utf-8").splitlines()
    for goal in [f"goal-hold-{n}" for n in range(10)] + [f"goal-gone-{n}" for n in range(2)]:
        assert [line for line in made if line.endswith(f" {goal}")] == [
            f"planner {goal}",
            f"worker {goal}",
        ]  # no model call after the cancel: no synthesis
