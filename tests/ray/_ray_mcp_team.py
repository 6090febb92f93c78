"""What the Ray MCP tests' replicas build: a clerk worker whose tools come from the
MCP test server (``tests/mcp_tools/server_app.py``), started in each replica.

The brain is module-level, so the worker pickles for the replicas (which import
this module as ``tests.ray._ray_mcp_team``: the Ray fixture puts the repository on
their ``PYTHONPATH``); the servers' command line (``SERVER_COMMAND``) is absolute, as a
Ray node needs.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any, cast

from regiment._json import JsonValue
from regiment.hierarchy import Planner, Ray, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart
from regiment.models import tool_call_response as call
from regiment.tools import MCPServer

__all__ = ("CALLS", "brain", "clerk_team", "empty", "growing_team", "planner_requests")

CALLS = ("m_add", "m_meta_key", "m_pid", "h_shout")  # a step calls those it has, in turn
_ARGUMENTS: dict[str, dict[str, JsonValue]] = {"m_add": {"a": 2, "b": 3}, "h_shout": {"text": "hi"}}
planner_requests: list[ModelRequest] = []  # the team's process's planner calls (not a replica's)


def brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        planner_requests.append(request)
        hang = re.search(r"hang on port (\d+)", str(request.messages))
        said = str(request.messages)
        task = "grow" if "grow a tool" in said else "fresh" if "the fresh tool" in said else ""
        task = f"hang {hang.group(1)}" if hang else task or "use the tools"
        listed = re.search(r"please call ([\w, :]+)", said)  # a goal: "please call a, b"
        task = f"call {listed.group(1)}" if listed else task
        return json.dumps({"steps": [{"id": "s1", "description": task, "worker": "clerk"}]})
    if request.role != "worker":
        return "done"
    port = re.search(r"Your step \(s1\): hang (\d+)", str(request.messages[0]))
    if port:  # the server tells the test on that port that the call arrived, then hangs
        return call("m_hang", {"port": int(port.group(1))})
    results = [
        p.content for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)
    ]
    first = str(request.messages[0])
    listed = re.search(r"Your step \(s1\): call ([\w, :]+)", first)
    if listed:  # "call m_pid, m_watch:4242": these tools in turn (":N", a port argument)
        wanted = [name.strip() for name in listed.group(1).split(",")]
        if len(results) == len(wanted):
            return json.dumps([str(r) for r in results])
        name, _, number = wanted[len(results)].partition(":")
        return call(name, {"port": int(number)} if number else {})
    if "Your step (s1): grow" in first:  # the server adds a tool, "fresh"
        return "grown" if results else call("g_grow", {"name": "fresh"})
    if "Your step (s1): fresh" in first:
        return f"fresh: {results[0]}" if results else call("g_fresh", {})
    offered = {t.name for t in request.tools}
    calls = [name for name in CALLS if name in offered]
    if len(results) < len(calls):
        name = calls[len(results)]
        return call(name, _ARGUMENTS.get(name, {}))
    return json.dumps(results)


def empty(arguments: object) -> bool:
    """An approval rule: a call with no arguments needs approval."""
    return not arguments


def clerk_team(
    *servers: MCPServer, max_restarts: int = 0, otlp_endpoint: str | None = None
) -> Team:
    """A team whose one worker, on one Ray replica, gets the tools of ``servers``
    (the replica's spans go to ``otlp_endpoint``, when given)."""
    model = ScriptedModel(brain)
    clerk = Worker(
        name="clerk",
        description="Calls the MCP tools.",
        model=model,
        tools=list(servers),
        placement=Ray(
            replicas=1, num_cpus=0, max_restarts=max_restarts, otlp_endpoint=otlp_endpoint
        ),
    )
    return Team(name="office", planner=Planner(model=model), workers=[clerk])


_GROWING = json.dumps(
    {
        "steps": [
            {"id": "s1", "description": "grow and hold", "worker": "clerk"},
            {"id": "s0", "description": "wait for the growth", "worker": "local"},
            {"id": "s2", "description": "fresh", "worker": "clerk", "depends_on": ["s0"]},
        ]
    }
)


async def _growing_brain(probe: str, request: ModelRequest) -> ModelResponse | str:
    """s1 (on the replica) grows ``g_fresh``, then holds in ``Probe.call`` until released;
    s0 (in the team's process) waits until it holds; s2, sent to the replica only then,
    calls ``g_fresh``, which the team's process has not heard of yet."""
    import ray

    if request.role == "planner":
        return _GROWING
    if request.role != "worker":
        return "done"
    results = [
        p.content for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)
    ]
    first, actor = str(request.messages[0]), cast(Any, ray.get_actor(probe))
    if "Your step (s1)" in first:
        if not results:
            return call("g_grow", {"name": "fresh"})
        await actor.call.remote(os.getpid())
        return "grown"
    if "Your step (s0)" in first:
        await actor.wait_started.remote(1)
        return "it grew"
    return f"fresh: {results[0]}" if results else call("g_fresh", {})


def growing_team(probe: str, grower: MCPServer) -> Team:
    """The clerk (one Ray replica, ``grower``'s tools) and an in-process ``local`` worker,
    planning and working by :func:`_growing_brain` (``probe``: a ``Probe`` actor's name)."""
    model = ScriptedModel(functools.partial(_growing_brain, probe))
    clerk = Worker(
        name="clerk",
        description="Calls the MCP tools.",
        model=model,
        tools=[grower],
        placement=Ray(replicas=1, num_cpus=0),
    )
    local = Worker(name="local", description="Waits.", model=model)
    return Team(name="office", planner=Planner(model=model), workers=[clerk, local])
