"""A team's process SIGKILLed mid-run: the child runs a team joined to the tests' Ray,
prints ``run <id>`` once its run started, and is killed when the test says so."""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ("killed_child",)


async def killed_child(argv: Sequence[str], log: Path, until: Callable[[], Awaitable[None]]) -> str:
    """Run ``argv`` (its stderr to ``log``), SIGKILL it once ``until()`` returns (no
    cleanup, no journal close: its replicas die with their owner); the run's id."""
    with log.open("wb") as errors:
        process = await anyio.open_process(list(argv), stdout=subprocess.PIPE, stderr=errors)
    killed = False
    try:
        assert process.stdout is not None
        out = BufferedByteReceiveStream(process.stdout)
        try:
            line = (await out.receive_until(b"\n", 10_000)).decode()
        except (anyio.IncompleteRead, anyio.EndOfStream):
            await process.wait()
            raise AssertionError(f"the child ended early: {_said(log)}") from None
        assert line.startswith("run "), (line, _said(log))
        await until()
        process.kill()
        killed = True
    finally:
        # Never kill twice: a second kill() of a child that has just died lets its
        # poll reap it before asyncio's watcher thread does, which then reports 255
        # ("Unknown child process pid"), a known asyncio race on Python 3.11.
        if not killed and process.returncode is None:
            process.kill()
        await process.wait()
        await process.aclose()
    assert process.returncode == -9, _said(log)
    return line.split()[1]


def _said(log: Path) -> str:
    """What the child wrote to stderr (read once it ended, or for a failed assertion)."""
    return log.read_text()
