"""A whole team served as one MCP tool, ``run(goal)``: what ``regiment mcp`` serves.

Any MCP client (Claude Desktop, another agent framework, the SDK's own client)
can then hand a goal to the team and get its answer back, with a progress
notification per finished step while it runs. The server is a thin adapter
over the public API: the tool calls ``running.stream(goal)`` like any user.

This module imports the ``mcp`` SDK at the top; the CLI imports it only for
``regiment mcp``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import TextIO

from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError

from regiment.errors import ConfigError, RegimentError
from regiment.hierarchy import (
    Event,
    PlanCreated,
    RunCompleted,
    RunFailed,
    RunningTeam,
    StepCompleted,
    StepErrored,
    Team,
)

__all__ = ("serve_team", "team_server")

logger = logging.getLogger("regiment.mcp")


def team_server(running: RunningTeam) -> SDKServer:
    """An MCP server with one tool, ``run(goal)``, that runs ``running``'s team."""
    team = running.team
    server: SDKServer = SDKServer(
        team.name, instructions=f"The team '{team.name}'; call run(goal).", log_level="WARNING"
    )

    async def run(goal: str, ctx: Context) -> str:
        """Run the team on the goal and return its answer."""
        try:
            return await _run(running, goal, ctx)
        except RegimentError as exc:  # an empty goal, say: the client is told why
            raise SDKToolError(f"{type(exc).__name__}: {exc}") from exc

    workers = "; ".join(f"{w.name}: {w.description}" for w in team.workers)
    server.add_tool(
        run,
        name="run",
        description=f"Hand a goal to the team '{team.name}' (workers: {workers}); "
        "returns the team's answer. Progress is reported per finished step.",
    )
    return server


async def _run(running: RunningTeam, goal: str, ctx: Context) -> str:
    progress = _Progress()
    async with running.stream(goal) as events:
        async for event in events:
            message = progress.see(event)
            if message is not None:
                await ctx.report_progress(progress.done, progress.total, message)
            match event:
                case RunCompleted(result=result):
                    return result.answer
                case RunFailed(error_type=kind, message=text):
                    raise SDKToolError(f"the run failed: {kind}: {text}")
                case _:
                    pass
    raise SDKToolError("the run ended without a result")


class _Progress:
    """Counts finished steps against the current plan's length."""

    def __init__(self) -> None:
        self.done = 0
        self.total: float | None = None

    def see(self, event: Event) -> str | None:
        match event:
            case PlanCreated(plan=plan):
                self.total = self.done + len(plan.steps)
                return f"plan v{plan.version}: {len(plan.steps)} steps"
            case StepCompleted(step_id=step, worker=worker):
                self.done += 1
                return f"step {step} done by {worker}"
            case StepErrored(step_id=step, worker=worker, status=status):
                self.done += 1
                return f"step {step} ({worker}) ended {status}"
            case _:
                return None


async def serve_team(team: Team, *, http_port: int | None = None, stderr: TextIO) -> None:
    """Start ``team`` and serve it over stdio, or over streamable HTTP on
    ``127.0.0.1:http_port`` (0: a free port), until the client goes away (stdin
    closes) or the process is stopped (SIGINT/SIGTERM for HTTP).

    Raises:
        ConfigError: HTTP was asked for on a backend other than asyncio.
    """
    if http_port is not None and not _on_asyncio():
        raise ConfigError("regiment mcp --http needs --backend asyncio (uvicorn runs on asyncio)")
    async with team.start() as running:
        server = team_server(running)
        if http_port is None:
            await server.run_stdio_async()
        else:
            await _serve_http(server, http_port, team.name, stderr)


async def _serve_http(server: SDKServer, port: int, name: str, stderr: TextIO) -> None:
    import uvicorn

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise ConfigError(
                f"cannot serve MCP on 127.0.0.1:{port} ({exc.strerror or exc}): pick another "
                "--http port (0 takes a free one), or stop what holds it"
            ) from None
        sock.listen(128)  # clients can connect from here on, so the URL is printed now
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        print(f"regiment: serving team '{name}' at {url}", file=stderr, flush=True)
        config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
        await uvicorn.Server(config).serve(sockets=[sock])


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
