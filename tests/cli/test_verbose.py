"""``regiment run -v`` / ``-vv``: a handler on the ``regiment`` logger for the run's
length, lines that carry the run's context; without the flag, no log lines."""

from __future__ import annotations

import io
import logging
import re
import uuid
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.telemetry import Telemetry

from .helpers import write_team

pytestmark = pytest.mark.anyio


async def _run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    code = await run_async(list(argv), stdout=io.StringIO(), stderr=err, environ={})
    return code, err.getvalue()


RETRY = re.compile(
    r" INFO regiment\.run: planner's plan reply could not be used, asking again: .*nobody.*"
    # the run's trace id too, when a tracer provider is set (an earlier test may set one)
    r" \[run_id=\S+ worker=planner( trace_id=[0-9a-f]{32})?\]$",
    re.M,
)


@pytest.mark.parametrize(("flags", "retries"), [([], 0), (["-v"], 2), (["-vv"], 2)])
async def test_verbosity_sets_the_level_and_the_lines_carry_the_run(
    tmp_path: Path, flags: list[str], retries: int
) -> None:
    team = write_team(tmp_path, "garbage")  # three invalid plans: two retries, then a failure
    root = logging.getLogger("regiment")
    Telemetry()  # attaches its log handler once a process, and keeps it: not the CLI's to undo
    handlers, level = list(root.handlers), root.level
    code, err = await _run("run", str(team), "do it", "--app-dir", str(tmp_path), *flags)
    assert code == 1
    assert len(RETRY.findall(err)) == retries, err
    assert (root.handlers, root.level) == (handlers, level)  # put back after the run


DIVIDE = '''
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, text_response, tool_call_response
from regiment.tools import tool


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def brain(request: ModelRequest) -> ModelResponse:
    if request.system.startswith("You are the planner"):
        return text_response('{"steps": [{"id": "s1", "description": "divide 1 by 0"}]}')
    if request.system.startswith("You are worker"):
        if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
            return text_response("could not divide")
        return tool_call_response("divide", {"a": 1, "b": 0}, call_id="c1")
    return text_response("no answer: division by zero")
'''

RAISED = re.compile(
    r" WARNING regiment\.worker: billing s1: divide failed: ZeroDivisionError"  # its type alone
    r" \[run_id=\S+ step_id=s1 worker=billing trace_id=[0-9a-f]{32}\]$",
    re.M,
)


@pytest.mark.parametrize(
    ("flags", "warnings", "traceback"), [([], 0, False), (["-v"], 1, False), (["-vv"], 1, True)]
)
async def test_a_tool_that_raises_is_a_warning_and_its_traceback_a_debug_line(
    tmp_path: Path, flags: list[str], warnings: int, traceback: bool
) -> None:
    module = f"cli_verbose_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(DIVIDE, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        f'''name = "sums"
model = "scripted"
brain = "{module}:brain"

[[workers]]
name = "billing"
description = "Does sums."
tools = ["{module}:divide"]
''',
        encoding="utf-8",
    )
    code, err = await _run("run", str(team), "divide", "--app-dir", str(tmp_path), *flags)
    assert code == 0, err
    assert len(RAISED.findall(err)) == warnings, err
    assert (" DEBUG regiment.tools: tool 'divide' raised" in err) is traceback
    assert ("ZeroDivisionError: division by zero\n" in err and "Traceback" in err) is traceback


HTTPX = '''
import logging

from regiment.models import ModelRequest, ModelResponse, ToolResultPart, text_response, tool_call_response
from regiment.tools import tool


@tool
def fetch(url: str) -> str:
    """Fetch url."""
    logging.getLogger("httpx").info("HTTP Request: GET %s", url)
    logging.getLogger("httpx").warning("the connection to %s was reset", url)
    return "fetched"


def brain(request: ModelRequest) -> ModelResponse:
    if request.system.startswith("You are the planner"):
        return text_response('{"steps": [{"id": "s1", "description": "fetch it"}]}')
    if request.system.startswith("You are worker"):
        if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
            return text_response("fetched")
        return tool_call_response("fetch", {"url": "http://here"}, call_id="c1")
    return text_response("fetched it")
'''

HTTPX_WARNING = re.compile(
    r"^\S+ \S+ WARNING httpx: the connection to http://here was reset \[run_id=\S+", re.M
)


@pytest.mark.parametrize(("flags", "requests"), [([], 0), (["-v"], 0), (["-vv"], 1)])
async def test_an_httpx_warning_is_a_line_of_ours_and_its_request_lines_need_vv(
    tmp_path: Path, flags: list[str], requests: int
) -> None:
    """httpx is one of the SDKs' loggers (a Ray replica forwards its warnings): its warning
    is written by the CLI's handler, with the run's context, not by Python's fallback
    handler (the bare message); its INFO line for every request shows only with -vv."""
    module = f"cli_httpx_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(HTTPX, encoding="utf-8")
    team = tmp_path / "team.toml"
    team.write_text(
        f'name = "fetchers"\nmodel = "scripted"\nbrain = "{module}:brain"\n\n'
        f'[[workers]]\nname = "getter"\ndescription = "Fetches."\ntools = ["{module}:fetch"]\n',
        encoding="utf-8",
    )
    httpx = logging.getLogger("httpx")
    handlers, level = list(httpx.handlers), httpx.level
    code, err = await _run("run", str(team), "fetch", "--app-dir", str(tmp_path), *flags)
    assert code == 0, err
    assert len(HTTPX_WARNING.findall(err)) == 1, err
    assert "\nthe connection to" not in "\n" + err  # not the fallback handler's bare line
    assert err.count("INFO httpx: HTTP Request: GET http://here") == requests, err
    assert (httpx.handlers, httpx.level) == (handlers, level)
