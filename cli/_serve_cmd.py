"""``regiment serve`` until stopped: a service manager's SIGTERM winds it down as Ctrl-C does."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Mapping
from typing import TextIO

import anyio

from regiment.cli._exit import EXIT_INTERRUPTED, LastWords, watch_signals
from regiment.hierarchy import Team
from regiment.serve import serve_command

__all__ = ("serve_until_stopped",)


async def serve_until_stopped(
    team: Team,
    args: argparse.Namespace,
    environ: Mapping[str, str],
    stderr: TextIO,
    interrupt: anyio.Event | None,
) -> int:
    """Serve ``team`` until ``interrupt`` is set or, without one, until SIGINT or SIGTERM.

    The first signal stops the service: its live runs are cancelled (and journaled
    so), the team stops, the journal closes; the exit code is then 0 after SIGTERM
    (the way a service manager stops a service) and 130 after Ctrl-C. A second signal
    exits at once. (uvicorn's own handling re-raised SIGTERM as it stopped, so the
    process died by it, -15, before the journal was closed or the last spans sent.)
    """
    if interrupt is not None:
        return await serve_command(team, args, environ=environ, stderr=stderr, stop=interrupt)
    stop, got = anyio.Event(), list[int]()
    refused: Exception | None = None  # raised as it is, not in a task group's exception group
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals, stop, LastWords(), got)
        try:
            code = await serve_command(team, args, environ=environ, stderr=stderr, stop=stop)
        except Exception as exc:  # ConfigError, JournalError: the caller explains them
            refused = exc
        tg.cancel_scope.cancel()  # stop watching signals
    if refused is not None:
        raise refused
    if code == 0 and got[:1] == [signal.SIGINT]:
        print("regiment: interrupted", file=stderr, flush=True)
        return EXIT_INTERRUPTED
    return code
