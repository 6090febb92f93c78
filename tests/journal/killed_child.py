"""A team run in a child process, killed with SIGKILL at a point the test chooses: no
cleanup runs, no journal is closed, as when a machine loses power."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ("journal_at", "killed_child")


def journal_at(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, name: str = "runs"
) -> str:
    """Where a test's journal is: ``kind`` "sqlite", a file ``<name>.db`` in ``tmp_path``;
    else a schema of its own on the session's PostgreSQL server."""
    if kind == "sqlite":
        return str(tmp_path / f"{name}.db")
    return str(request.getfixturevalue("postgres_url"))


def _said(log: Path) -> str:
    return log.read_text()


@asynccontextmanager
async def killed_child(
    child: Path, args: list[str], log: Path, ready: str, seconds: float
) -> AsyncIterator[str]:
    """Run ``child`` with ``args`` (its stderr to ``log``) until it prints ``run <id>``,
    then ``ready``, within ``seconds``; yield the run's id, and when the block ends,
    SIGKILL the child (which must die of it)."""
    with log.open("w") as errors:
        process = await anyio.open_process(
            [sys.executable, str(child), *args], stdout=subprocess.PIPE, stderr=errors
        )
    try:
        assert process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(seconds, shield=True):
            first = (await out.receive_until(b"\n", 1000)).decode()
            assert first.startswith("run "), (first, _said(log))
            assert (await out.receive_until(b"\n", 1000)).decode() == ready
        yield first.split()[1]
        process.kill()  # SIGKILL: no cleanup, no journal close
        await process.wait()
        assert process.returncode == -9, _said(log)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.aclose()
