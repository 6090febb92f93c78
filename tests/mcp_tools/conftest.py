"""Real MCP servers for the tests: ``server_app.py`` over stdio (a subprocess per
connection) and over streamable HTTP (one subprocess per test module, owned and
reaped by the ``http_url`` fixture)."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

APP = str(Path(__file__).with_name("server_app.py"))
SERVER_COMMAND = (sys.executable, APP)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the test process dies, even when a
    hard timeout ends it without running fixture teardown (Linux's PR_SET_PDEATHSIG)."""
    if sys.platform == "linux":
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def alive(pids: list[int]) -> list[int]:
    """The ones of ``pids`` that still run (a zombie counts as reaped by nobody: alive)."""
    still = []
    for pid in pids:
        try:
            psutil.Process(pid).status()
        except psutil.NoSuchProcess:
            continue
        still.append(pid)
    return still


def server_children() -> list[psutil.Process]:
    """Processes of ``server_app.py`` that this test process started (any depth); not
    the watchdog each has on Linux (``python -I -S -c GUARD ... server_app.py``), which
    ends with its server."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            line = child.cmdline()
            if APP in line and "--http" not in line and "-c" not in line[:4]:
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


# The SDK's streamable HTTP client leaves its SSE async generators (httpx2, httpcore2)
# to the garbage collector; trio's finalizer reports each as a ResourceWarning
# (asyncio closes them quietly). The calls work; only these warnings are let through.
SDK_HTTP_LEAKS = (
    pytest.mark.filterwarnings(r"ignore:Async generator 'httpx2\.:ResourceWarning"),
    pytest.mark.filterwarnings(r"ignore:Async generator 'httpcore2\.:ResourceWarning"),
)


def start_http(
    port: int = 0, name: str = "httpserver", *options: str
) -> tuple[subprocess.Popen[str], int]:
    """``server_app.py --http`` on ``port`` (0: a free one), with ``options``
    (``--token T``); returns once its socket listens."""
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--http", "--name", name, "--port", str(port), *options],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # printed once the socket listens
    if not line.startswith("PORT "):
        stop(process)
        raise AssertionError(f"the HTTP test server did not start: {line!r}")
    return process, int(line.split()[1])


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL after 10 s; reaped either way."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """A streamable-HTTP MCP server on a free 127.0.0.1 port; stopped with escalation."""
    process, port = start_http()
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)
