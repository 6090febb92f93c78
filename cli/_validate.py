"""``regiment validate``: what the team file builds, without starting anything."""

from __future__ import annotations

import argparse
import io
from typing import TYPE_CHECKING, TextIO

from regiment.cli._codes import config_error
from regiment.cli._printed import put_out
from regiment.cli._resume import add_import_root
from regiment.config import TeamConfig, check_config, load_config
from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.hierarchy import TeamWorker, Worker

__all__ = ("validate", "validate_command")


def validate_command(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``regiment validate`` outside an event loop (what ``_dispatch`` does for it inside
    one); what it says that cannot be written to stdout fails it (``put_out``)."""
    try:
        add_import_root(args.app_dir)
        said = io.StringIO()
        code = validate(load_config(args.team_file), args.team_file, said)
    except ConfigError as exc:
        return config_error(exc, stderr)
    return put_out(said.getvalue(), "validate", stdout, stderr) or code


def validate(config: TeamConfig, source: str, stdout: TextIO) -> int:
    """Build the team from ``config`` (checking every path and value) and describe it;
    exit code 0 (a ``ConfigError`` says what is wrong)."""
    team = check_config(config, source=source)
    print(f"{source}: ok, team '{team.name}'", file=stdout)
    specs = config.model_specs()
    print(
        f"  planner: {specs['planner.model']}, at most {team.planner.max_steps} steps", file=stdout
    )
    for index, (entry, worker) in enumerate(zip(config.workers, team.workers, strict=True)):
        tools = _tools_of(worker)
        # A team worker's models are in its own file (checked above, with this one).
        uses = f"team file {entry.team}" if entry.team else specs[f"workers[{index}].model"]
        print(f"  worker {worker.name}: {uses}; {tools}", file=stdout)
    for name, check in team.checks.items():
        print(f"  check {name}: {check.description}", file=stdout)
    return 0


def _tools_of(worker: Worker | TeamWorker) -> str:
    """A worker's tools for ``validate``: its own by name, its MCP servers by name (they
    are not started, so their tools are not known)."""
    from regiment.hierarchy import Worker  # loaded already: the team was built

    own = ", ".join(worker.capabilities)
    servers = worker.mcp_servers if isinstance(worker, Worker) else ()
    if not servers:
        return own or "no tools"
    named = ", ".join(
        repr(s.name)
        if s.name == s.transport.describe()
        else f"{s.name!r} ({s.transport.describe()})"
        for s in servers
    )
    plural = "s" if len(servers) > 1 else ""
    mcp = f"the tools of MCP server{plural} {named} (listed when the team starts)"
    return f"{own}; {mcp}" if own else mcp
