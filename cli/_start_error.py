"""What ``regiment run`` says when its team cannot start: which entry of the team file."""

from __future__ import annotations

from regiment.errors import ConfigError, ToolError
from regiment.hierarchy import Team, Worker

__all__ = ("start_error",)


def start_error(exc: ToolError, team: Team, team_file: str) -> ConfigError:
    """The usage error of an MCP server that could not be started, naming the team file and
    the entry of that server (``team.toml: workers[1].mcp[0]: ...``, which the command's
    error line gives its line), as ``regiment validate`` names the servers it can check.
    A server of a nested team's file (or one not found) is named by the message alone."""
    message = str(exc)
    for index, worker in enumerate(team.workers):
        if not isinstance(worker, Worker):
            continue  # a nested team: its servers are entries of its own file
        for number, server in enumerate(worker.mcp_servers):
            if message.startswith(f"MCP server {server.name!r}"):
                where = f"{team_file}: workers[{index}].mcp[{number}]: "
                return ConfigError(f"{where}the team could not start: {message}")
    return ConfigError(f"the team could not start: {message}")
