"""Team files and brains written into a temporary directory, for the command to import."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from regiment.cli import run_async

BRAINS = '''
from pathlib import Path

import anyio
from regiment.errors import ModelAPIError
from regiment.models import ModelRequest, ModelResponse, text_response


def garbage(request: ModelRequest) -> ModelResponse:
    """A planner that only ever assigns steps to a worker the team does not have."""
    return text_response('{"steps": [{"id": "s1", "description": "x", "worker": "nobody"}]}')


async def breaks(request: ModelRequest) -> ModelResponse:
    """Plans two steps at once: s1's model call fails, s2's never answers."""
    if request.role in ("planner", "replanner"):
        plan = '{"steps": [{"id": "s1", "description": "break"}, {"id": "s2", "description": "wait"}]}'
        return text_response(plan)
    if "Your step (s1)" in str(request.messages[0].parts[0]):
        raise ModelAPIError("upstream broke", status_code=500)
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def stuck(request: ModelRequest) -> ModelResponse:
    """Plans one step, then the worker's model never answers."""
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "wait for ever"}]}')
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def unplanned(request: ModelRequest) -> ModelResponse:
    """A planner that never answers."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def idle(request: ModelRequest) -> ModelResponse:
    """Plans nothing to do, then answers with nothing."""
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": []}')
    return text_response("")


async def stuck_while_told(request: ModelRequest) -> ModelResponse:
    """As ``stuck`` while the working directory has a file named ``stuck``; else the
    worker answers and the run ends."""
    if request.role in ("planner", "replanner"):
        return text_response('{"steps": [{"id": "s1", "description": "wait for ever"}]}')
    if request.role == "worker" and Path("stuck").exists():
        await anyio.sleep_forever()
    return text_response("waited")
'''


SLEEPY = '''
import json
import sys
import time

import anyio

from regiment.models import ModelRequest, ModelResponse, ToolCallPart, text_response
from regiment.tools import tool


@tool
def nap(minutes: int) -> str:
    """Sleeps in a plain (sync) body, which no cancel can stop."""
    print("napping", file=sys.stderr, flush=True)
    time.sleep(minutes * 60)
    return "rested"


@tool
async def doze(minutes: int) -> str:
    """Sleeps in an async body that swallows every cancel (the bug it stands for)."""
    print("napping", file=sys.stderr, flush=True)
    deadline = time.monotonic() + minutes * 60
    while time.monotonic() < deadline:
        try:
            await anyio.sleep(deadline - time.monotonic())
        except anyio.get_cancelled_exc_class():
            pass
    return "rested"


def brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"description": "take a nap"}]}))
    if request.role != "worker" or len(request.messages) > 1:
        return text_response("done")
    call = ToolCallPart(id="n1", name=request.tools[0].name, arguments={"minutes": 1})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
'''


def write_napping_team(directory: Path, tool: str) -> Path:
    """A one-worker team file whose one step calls ``tool`` of ``SLEEPY`` (``nap``, a sync
    body, or ``doze``, an async one that swallows its cancel) for a minute."""
    (directory / "sleepy.py").write_text(SLEEPY, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        'name = "nappers"\nmodel = "scripted"\nbrain = "sleepy:brain"\n\n[[workers]]\n'
        f'name = "napper"\ndescription = "Naps."\ntools = ["sleepy:{tool}"]\n'
        "cancel_grace = 0.1\n",
        encoding="utf-8",
    )
    return team


# What the command says while it waits for each kind of tool that goes on after Ctrl-C.
WAITING = {
    "nap": "regiment: waiting for 1 tool call still running in a thread",
    "doze": "ignores cancellation and still runs",
}


def read_until(child: subprocess.Popen[str], text: str, seen: list[str]) -> None:
    """Read the command's stderr lines into ``seen`` until one holds ``text``."""
    assert child.stderr is not None
    while not any(text in line for line in seen):
        line = child.stderr.readline()
        assert line, f"the command ended before saying {text!r}: {''.join(seen)}"
        seen.append(line)


def write_team(directory: Path, brain: str, *, replans: int = 3) -> Path:
    """A one-worker team file whose scripted brain is ``brain`` (``garbage``, ``breaks``,
    ``stuck``, ``stuck_while_told``, ``unplanned`` or ``idle``), allowing ``replans``."""
    module = f"cli_brains_{uuid.uuid4().hex[:8]}"  # unique: imported modules are cached
    (directory / f"{module}.py").write_text(BRAINS, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        f"""
name = "waiters"
model = "scripted"
brain = "{module}:{brain}"

[budget]
replans = {replans}

[[workers]]
name = "waiter"
description = "Waits."
""",
        encoding="utf-8",
    )
    return team


def regiment_process(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m regiment ARGV`` run to its end in ``cwd`` (its output captured); the
    caller's ``REGIMENT_JOURNAL`` is left out, ``env`` added."""
    environ = {k: v for k, v in os.environ.items() if k != "REGIMENT_JOURNAL"}
    return subprocess.run(
        [sys.executable, "-m", "regiment", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**environ, **(env or {})},
    )


@contextmanager
def terminal(typed: bytes) -> Iterator[TextIO]:
    """A pseudo-terminal's input side, with ``typed`` already typed into it."""
    leader, follower = os.openpty()
    stdin = open(follower, encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    try:
        os.write(leader, typed)
        yield stdin
    finally:
        os.close(leader)  # a hang-up first: a read still blocked on the terminal ends
        stdin.close()


async def run_cli(*argv: str, environ: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``regiment ARGV`` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(list(argv), stdout=out, stderr=err, environ=environ or {})
    return code, out.getvalue(), err.getvalue()


def with_stdout_closed(
    argv: list[str], *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``argv`` run from the repository's root with a stdout whose reader is gone before
    it writes a byte (as ``| head`` leaves it, sooner); stderr captured."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            argv,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
