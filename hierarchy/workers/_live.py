"""A worker as a started team's planner sees it: with its MCP servers' tools.

A :class:`~regiment.hierarchy.Worker` is configuration; the tools its MCP
servers offer are only known once the team has started them. The planner is
told a worker's capabilities through this view, which reads the live list.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, final

from regiment.errors import ConfigError
from regiment.hierarchy.workers._worker import Worker
from regiment.tools import MCPHub, Toolset, WorkerTools

__all__ = ("CurrentTools", "LiveWorker", "worker_tools")

_log = logging.getLogger("regiment.worker")


class CurrentTools(Protocol):
    """A worker's tools that may change while the team runs (``WorkerTools``, say)."""

    def current(self) -> Toolset:
        """The tool set now."""
        ...


@final
@dataclass(frozen=True, slots=True)
class LiveWorker:
    """A :class:`~regiment.hierarchy.workers._worker.WorkerSpec` over a worker and its live tools."""

    worker: Worker
    tools: CurrentTools

    @property
    def name(self) -> str:
        """The worker's name."""
        return self.worker.name

    @property
    def description(self) -> str:
        """What the worker is good at."""
        return self.worker.description

    @property
    def artifact(self) -> bool:
        """Whether its answers are kept verbatim."""
        return self.worker.artifact

    @property
    def capabilities(self) -> tuple[str, ...]:
        """Its tool names now: its own and its MCP servers'."""
        return self.tools.current().names

    @property
    def step_model_calls(self) -> int:
        """Its iteration cap."""
        return self.worker.step_model_calls


async def worker_tools(worker: Worker, mcp: MCPHub | None) -> WorkerTools:
    """The worker's live tools, starting its MCP servers (once per hub) first."""
    if not worker.mcp_servers:
        return WorkerTools(worker.toolset)
    if mcp is None:
        raise ConfigError(
            f"worker '{worker.name}' has MCP servers, which need an MCPHub: start the team "
            "with Team.start(), or pass mcp= to RunningTeam.spawn"
        )
    needs = tuple(worker.require_approval)  # a tuple since Worker.__post_init__
    tools = await mcp.worker_tools(worker.toolset, worker.mcp_servers, needs)
    _say_unusable(worker.name, tools)
    names = tools.current().names
    unknown = [name for name in needs if name not in names]
    if unknown:
        raise ConfigError(
            f"worker '{worker.name}': require_approval names tool '{unknown[0]}', which "
            f"neither it nor its MCP servers have; its tools are: {', '.join(names) or '(none)'}"
        )
    return tools


def _say_unusable(worker: str, tools: WorkerTools) -> None:
    """A server of the worker's whose tools (those ``include``/``exclude`` keep) were all
    left out as unusable gives it nothing: say so at start, not at its first step."""
    for connection in tools.connections:
        left_out = connection.left_out
        if connection.tools or not left_out:
            continue
        why = "; ".join(f"{name!r}: {reason}" for name, reason in list(left_out.items())[:5])
        _log.warning(
            "worker %r gets no tools from MCP server %r: every tool of it the worker is "
            "configured to use was left out as unusable (%s); fix the server's tool "
            "listings, or configure the worker with other tools",
            worker,
            connection.server.name,
            why,
            extra={"worker": worker, "mcp_server": connection.server.name},
        )
