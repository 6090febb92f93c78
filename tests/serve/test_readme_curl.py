"""The README's Service lines, run without curl: ``regiment serve`` as written, then each
curl line as the same HTTP request, in order (``RUN_ID`` is the id the 202 gave)."""

from __future__ import annotations

import io
import re
import shlex
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from regiment.cli import run_async

from .cli_serving import Log
from .sse import frames

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SECTION = re.search(r"## Service\n.*?```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _curl(line: str, port: int, run_id: str) -> httpx.Request:
    words = shlex.split(line.replace("RUN_ID", run_id))
    assert words[0] == "curl"
    method, headers, body, url = "GET", {}, None, ""
    it = iter(words[1:])
    for word in it:
        if word == "-X":
            method = next(it)
        elif word == "-H":
            name, _, value = next(it).partition(": ")
            headers[name] = value
        elif word == "-d":
            body = next(it).encode()
            method = "POST" if method == "GET" else method
        elif not word.startswith("-"):
            url = word.replace("localhost:8000", f"http://127.0.0.1:{port}")
    return httpx.Request(method, url, headers=headers, content=body)


async def test_the_readme_service_lines_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(ROOT)
    assert SECTION is not None, "README has no Service section with a sh block"
    lines = [ln.split("  #")[0].strip() for ln in SECTION.group(1).strip().splitlines()]
    serve, curls = shlex.split(lines[0]), lines[1:]
    assert serve[:2] == ["regiment", "serve"]
    assert len(curls) == 7
    err, stop, seen = Log(), anyio.Event(), []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            argv = [*serve[1:], "--port", "0"]  # the port uvicorn takes: err.port
            assert (
                await run_async(argv, stdout=io.StringIO(), stderr=err, environ={}, interrupt=stop)
                == 0
            )

        tg.start_soon(run)
        await err.ready.wait()
        port, run_id = err.port, ""
        async with httpx.AsyncClient() as client:
            for line in curls:
                response = await client.send(_curl(line, port, run_id), stream=True)
                if "events" in line:
                    seen = [f.event async for f in frames(response) if f.comment is None]
                else:
                    await response.aread()
                await response.aclose()
                assert response.status_code in (200, 202), (line, response.text)
                if response.status_code == 202 and not run_id:
                    run_id = response.json()["run_id"]
                if "?wait=true" in line:
                    assert response.json()["status"] == "completed"
                if "status=completed" in line:
                    assert len(response.json()["runs"]) == 2
        stop.set()
    assert seen[0] == "RunStarted"
    assert seen[-1] == "RunCompleted"
