"""MCP tools served in another process (a Ray replica), as the team's process knows them.

A worker placed on Ray starts its MCP servers in each of its replicas; the
sessions, and every call, stay there. The team's process still needs the tools'
names (the planner is told them), and each tool's schema and policy (an approval
request is decided there, and an edit to its arguments is checked against the
schema). :class:`MCPToolList` is what a replica reports of one server;
:func:`served_elsewhere` makes tools of it whose bodies never run here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

from regiment._json import JsonValue
from regiment.errors import ConfigError, ToolError
from regiment.tools._context import RunContext
from regiment.tools._definition import ToolDefinition
from regiment.tools._mcp_hub import WorkerTools
from regiment.tools._mcp_server import MCPServer, require_mcp
from regiment.tools._mcp_tools import JsonSchemaArguments
from regiment.tools._tool import Tool
from regiment.tools._toolset import Toolset

__all__ = ("MCPToolList", "listed_tools", "served_elsewhere")


@final
@dataclass(frozen=True, kw_only=True)
class MCPToolList:
    """One MCP server's tools as a process that runs it listed them (filtered, prefixed).

    Attributes:
        server: the server, as that process configured it (its tool options).
        definitions: each tool the worker gets: name, description, input schema.
    """

    server: MCPServer
    definitions: tuple[ToolDefinition, ...]


def listed_tools(tools: WorkerTools) -> tuple[MCPToolList, ...]:
    """What ``tools``' MCP servers offer now, one list per server."""
    return tuple(
        MCPToolList(server=c.server, definitions=tuple(t.definition for t in c.tools))
        for c in tools.connections
    )


def served_elsewhere(
    base: Toolset, lists: Sequence[MCPToolList], require_approval: Sequence[str], where: str
) -> Toolset:
    """``base`` with a tool for each listed one, whose body is not run here (a call
    fails with a ``ToolError`` naming ``where``); ``require_approval`` names those
    of its tools whose every call needs approval.

    Raises:
        ConfigError: ``require_approval`` names a tool there is not, or the ``mcp``
            extra (its schema checks) is not installed.
    """
    if not lists:
        return base
    require_mcp()
    tools = list(base.tools)
    for listed in lists:
        for definition in listed.definitions:
            tools.append(_stand_in(listed.server, definition, where))
    merged = Toolset(
        base.name,
        tools,
        max_concurrency=base.max_concurrency,
        approver=base.approver,
        max_result_chars=base.max_result_chars,
    )
    unknown = [name for name in require_approval if name not in merged.names]
    if unknown:
        raise ConfigError(
            f"worker '{base.name}': require_approval names tool '{unknown[0]}', which neither "
            f"it nor its MCP servers have; its tools are: {', '.join(merged.names) or '(none)'}"
        )
    return merged.requiring_approval(require_approval)


def _stand_in(server: MCPServer, definition: ToolDefinition, where: str) -> Tool[..., object]:
    name = definition.name

    async def elsewhere(context: RunContext[object] | None, /, **arguments: JsonValue) -> None:
        raise ToolError(f"tool {name!r} of MCP server {server.name!r} runs {where}, not here")

    return Tool(
        elsewhere,
        name=name,
        description=definition.description,
        validator=JsonSchemaArguments(definition.input_schema, name),
        **server.options,
    )
