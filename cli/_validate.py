"""``regiment validate``: what the team file builds, without starting anything."""

from __future__ import annotations

import argparse
import io
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import msgspec

from regiment._text import counted, visible
from regiment.cli._codes import config_error
from regiment.cli._printed import put_out
from regiment.cli._resume import add_import_root
from regiment.errors import ConfigError

if TYPE_CHECKING:
    from regiment.config import TeamConfig
    from regiment.hierarchy import Team, TeamWorker, Worker
    from regiment.models import ModelSettings
    from regiment.tools import Tool

__all__ = ("validate", "validate_command")


def validate_command(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``regiment validate`` outside an event loop (what ``_dispatch`` does for it inside
    one); what it says that cannot be written to stdout fails it (``put_out``)."""
    from regiment.config import load_config  # here: the CLI's other commands go without it

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
    from regiment.config import check_config

    team = check_config(config, source=source)
    specs = config.model_specs()
    planner = f"{specs['planner.model']}, at most {team.planner.max_steps} steps"
    planner += _tuned(team.planner.settings)
    planner += _tuned(team.planner.synthesizer_settings, "synthesizer settings")
    lines = [f"{source}: ok, team '{team.name}'", f"  planner: {planner}"]
    for index, (entry, worker) in enumerate(zip(config.workers, team.workers, strict=True)):
        tools = _tools_of(worker) + _tuned(getattr(worker, "settings", None))
        # A team worker's models are in its own file (checked above, with this one).
        uses = f"team file {entry.team}" if entry.team else specs[f"workers[{index}].model"]
        lines.append(f"  worker {worker.name}: {uses}; {tools}")
    lines += [f"  check {name}: {check.description}" for name, check in team.checks.items()]
    lines += [f"  {line}" for line in _run_lines(config, team, source)]
    for line in lines:
        # The file's own text (a name, a check's description) cannot drive the terminal,
        # nor split a line of the summary in two.
        print(visible(line).replace("\n", "\\n"), file=stdout)
    return 0


def _run_lines(config: TeamConfig, team: Team, source: str) -> list[str]:
    """What shapes a run beyond its roles, one line each, for what the file sets: the
    critic, compression, every role's settings, the answer's ``output_type``, a budget
    (its limits), concurrency; a value the file writes equal to its default is named
    too, marked so."""
    from regiment.config import TeamConfig  # loaded already: the team was built
    from regiment.hierarchy import Budget

    lines: list[str] = []
    written = _written(source)
    planner_model = f"the planner's model ({config.model_specs()['planner.model']})"
    if config.critic is not None:
        model = config.critic.model or planner_model
        rounds = f"at most {team.budget.rounds} rounds"
        lines.append(f"critic: {model}, {rounds}{_tuned(getattr(team.critic, 'settings', None))}")
    if config.compression is not None and team.compression is not None:
        model = config.compression.model or planner_model
        after = f"passes {team.compression.threshold:,} estimated tokens"
        tuned = _tuned(team.compression.settings)
        lines.append(f"compression: {model}, when the carried context {after}{tuned}")
    if team.settings is not None:  # a role's own win key by key
        lines.append(f"settings of every role: {_settings_text(team.settings)}")
    if config.output_type is not None:
        retries = counted(team.output_retries, "re-ask")
        lines.append(
            f"output_type: {config.output_type}, the answer must match it "
            f"(at most {retries} of one that does not)"
        )
    table = written.get("budget")
    in_table = table if isinstance(table, dict) else {}
    if team.budget != Budget() or in_table:
        given = []
        for f in msgspec.structs.fields(Budget):
            value = getattr(team.budget, f.name)
            note = _note(value, f.default, f.name in in_table)
            if f.name != "on_exhausted" and note is not None:
                given.append(f"{f.name} {_limit(f.name, value)}{note}")
        limits = ", ".join(given) or "no limits set"
        lines.append(f"budget: {limits}; on_exhausted {team.budget.on_exhausted!r}")
    default = _default(TeamConfig, "concurrency")
    if (note := _note(team.concurrency, default, "concurrency" in written)) is not None:
        lines.append(f"concurrency: at most {team.concurrency} steps of a run at once{note}")
    return lines


def _tuned(settings: ModelSettings | None, name: str = "settings") -> str:
    """``; settings max_tokens 4,000, temperature 0.2`` for a role's own model settings
    (the keys the file sets), nothing for none."""
    return f"; {name} {_settings_text(settings)}" if settings is not None else ""


def _settings_text(settings: ModelSettings) -> str:
    """The keys ``settings`` sets, with their values: ``max_tokens 4,000, timeout 30.0 s``."""
    given = []
    for key in settings.KEYS:
        value = getattr(settings, key)
        if value is None or (key == "extra" and not value):
            continue
        if key == "timeout":
            given.append(f"timeout {value} s")
        elif isinstance(value, (tuple, dict)):  # stop_sequences, extra: as JSON writes them
            given.append(f"{key} {msgspec.json.encode(value).decode()}")
        else:
            given.append(f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}")
    return ", ".join(given) or "none set"


def _note(value: object, default: object, written: bool) -> str | None:
    """How the summary names a value: ``None`` (not at all) when it is its default and
    the file does not write it; after it, ``" (the default)"`` when the file writes it
    equal to its default, else nothing."""
    if value != default:
        return ""
    return " (the default)" if written else None


def _written(source: str) -> dict[str, object]:
    """The top-level keys and values the team file at ``source`` writes, as written: the
    decoded config has every field, set or not, so a value given equal to its default
    looks unset there. The file parsed a moment ago; one that cannot be read now gives
    none."""
    try:
        text = Path(source).read_text(encoding="utf-8-sig")
        if Path(source).suffix.lower() == ".toml":
            raw: object = tomllib.loads(text)
        else:
            import yaml  # a YAML file was read with it just now

            try:
                raw = yaml.safe_load(text)
            except yaml.YAMLError:  # changed since
                return {}
    except (OSError, ValueError):  # changed since, or gone
        return {}
    return {str(key): value for key, value in raw.items()} if isinstance(raw, dict) else {}


def _default(kind: type[msgspec.Struct], name: str) -> object:
    return next(f.default for f in msgspec.structs.fields(kind) if f.name == name)


def _limit(name: str, value: object) -> str:
    """A budget limit as a summary line shows it (seconds with their unit)."""
    if value is None:  # written as null in a YAML file
        return "unlimited"
    if name == "wall_clock":
        return f"{value} s"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _tools_of(worker: Worker | TeamWorker) -> str:
    """A worker's tools for ``validate``: its own by name, its MCP servers by name (they
    are not started, so their tools are not known)."""
    from regiment.hierarchy import Worker  # loaded already: the team was built

    if not isinstance(worker, Worker):  # a team worker: the child team's workers
        return ", ".join(worker.capabilities) or "no tools"
    own = ", ".join(_tool_name(tool) for tool in worker.toolset)
    servers = worker.mcp_servers
    if not servers:
        return own or "no tools"
    named = ", ".join(
        repr(s.name)
        if s.name == s.transport.describe()
        else f"{s.name!r} ({s.transport.describe()})"
        for s in servers
    )
    plural = "s" if len(servers) > 1 else ""
    # require_approval may name a server's tools, checked once the team lists them
    waits = [n for n in worker.require_approval if n not in worker.toolset.names]
    needs = f"; {', '.join(waits)} needs approval" if waits else ""
    mcp = f"the tools of MCP server{plural} {named} (listed when the team starts{needs})"
    return f"{own}; {mcp}" if own else mcp


def _tool_name(tool: Tool[..., object]) -> str:
    """A tool's name, and whether its calls wait for a decision (``@tool(requires_approval=...)``,
    or the worker's ``require_approval``): every call, or those its rule picks."""
    rule = tool.policy.requires_approval
    if rule is False:
        return tool.name
    return f"{tool.name} (needs approval)" if rule is True else f"{tool.name} (may need approval)"
