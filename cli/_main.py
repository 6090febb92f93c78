"""The ``regiment`` command (also ``python -m regiment``).

::

    regiment run TEAM_FILE "goal" [--model SPEC] [--trace jaeger|console|none]
                                  [--events jsonl [--events-file PATH]] [--plain]
    regiment serve TEAM_FILE [--host H] [--port P] [--token T] [--model SPEC]
    regiment validate TEAM_FILE

Exit codes: 0 the run finished (its answer is on stdout), 1 the run failed
(the reason is on stderr), 2 a usage or config error, 130 interrupted
(Ctrl-C cancels the run cleanly and says how far it got).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import anyio

from regiment.config import TeamConfig, build_team, check_config, load_config, team_files
from regiment.errors import ConfigError, RegimentError
from regiment.tools._mcp_server import require_mcp

if TYPE_CHECKING:
    from regiment.cli._run import Outcome, RunOptions

__all__ = ("main", "run_async")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="regiment",
        description="Run a team of agents declared in a TOML or YAML file.",
        epilog="exit codes: 0 done, 1 run failed, 2 usage or config error, 130 interrupted",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run one goal and print the answer")
    run.add_argument("team_file", metavar="TEAM_FILE", help="a .toml, .yaml or .yml team file")
    run.add_argument("goal", metavar="GOAL", help="what the team should do")
    run.add_argument(
        "--model",
        metavar="SPEC",
        help="the model for every role: 'anthropic:<model id>' or 'scripted' (the file's brain)",
    )
    run.add_argument(
        "--trace",
        choices=("jaeger", "console", "none"),
        default="none",
        help="jaeger: OTLP/HTTP to localhost:4318 (or OTEL_EXPORTER_OTLP_ENDPOINT); "
        "console: print the span tree after the run (default: none)",
    )
    run.add_argument(
        "--events", choices=("jsonl",), help="write every event as one JSON object per line"
    )
    run.add_argument(
        "--events-file", metavar="PATH", help="write the events here instead of to stdout"
    )
    run.add_argument(
        "--plain", action="store_true", help="plain event lines even on a terminal (no live view)"
    )
    run.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    run.add_argument(
        "--app-dir",
        metavar="DIR",
        default=".",
        help="where the file's module:attribute paths are imported from (default: .)",
    )
    _add_server_commands(commands)
    validate = commands.add_parser("validate", help="check a team file without running it")
    validate.add_argument("team_file", metavar="TEAM_FILE")
    validate.add_argument("--app-dir", metavar="DIR", default=".")
    return parser


def _add_server_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``regiment mcp`` and ``regiment serve``: a team behind a protocol."""
    mcp = commands.add_parser("mcp", help="serve the team as one MCP tool, run(goal), over stdio")
    mcp.add_argument("team_file", metavar="TEAM_FILE")
    mcp.add_argument("--model", metavar="SPEC", help="as for run")
    mcp.add_argument(
        "--http",
        metavar="PORT",
        type=int,
        help="streamable HTTP on 127.0.0.1:PORT (0: a free port)",
    )
    mcp.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    mcp.add_argument("--app-dir", metavar="DIR", default=".")
    serve = commands.add_parser("serve", help="serve the team over HTTP (runs, events, cancel)")
    serve.add_argument("team_file", metavar="TEAM_FILE")
    serve.add_argument("--model", metavar="SPEC", help="as for run")
    serve.add_argument(
        "--host", default="127.0.0.1", help="default 127.0.0.1 (others need a token)"
    )
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--journal", metavar="J", help="reserved: runs are not journaled yet")
    serve.add_argument("--token", metavar="T", help="bearer token (default: $REGIMENT_TOKEN)")
    serve.add_argument("--app-dir", metavar="DIR", default=".")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``regiment`` command line; returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, already explained)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    backend = getattr(args, "backend", "asyncio")
    run = functools.partial(
        _dispatch, args, stdout=sys.stdout, stderr=sys.stderr, environ=os.environ, interrupt=None
    )
    try:
        return anyio.run(run, backend=backend)
    except KeyboardInterrupt:  # before the signal watcher was up, or a second Ctrl-C
        print("regiment: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


async def run_async(
    argv: Sequence[str],
    *,
    stdout: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str] | None = None,
    interrupt: anyio.Event | None = None,
) -> int:
    """The command inside a running event loop (what ``main`` runs; tests call it directly).

    Args:
        argv: the arguments after ``regiment``.
        stdout: where the answer (or ``--events jsonl`` lines) go.
        stderr: where progress, notes and errors go.
        environ: the environment (``ANTHROPIC_API_KEY`` decides the offline fallback).
        interrupt: setting it cancels the run as Ctrl-C does; ``None`` watches
            SIGINT and SIGTERM instead.
    """
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    env = os.environ if environ is None else environ
    return await _dispatch(args, stdout=stdout, stderr=stderr, environ=env, interrupt=interrupt)


async def _dispatch(
    args: argparse.Namespace,
    *,
    stdout: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str],
    interrupt: anyio.Event | None,
) -> int:
    _add_import_root(args.app_dir)
    try:
        config = load_config(args.team_file)
        if args.command == "validate":
            return _validate(config, args.team_file, stdout)
        if args.command == "mcp":
            return await _serve_mcp(config, args, environ, stderr)
        if args.command == "serve":
            from regiment.serve import serve_command  # the serve extra, only for this command

            model = _choose_model(config, args.team_file, args.model, environ, stderr)
            team = build_team(config, model=model, source=args.team_file)
            return await serve_command(team, args, environ=environ, stderr=stderr, stop=interrupt)
        if args.events_file and args.events != "jsonl":
            raise ConfigError("--events-file needs --events jsonl")
        # `run` alone needs the OpenTelemetry SDK (its trace report); validate stays lean.
        from regiment.cli._run import RunOptions

        options = RunOptions(
            team_file=args.team_file,
            goal=args.goal,
            model=_choose_model(config, args.team_file, args.model, environ, stderr),
            trace=args.trace,
            events_jsonl=args.events == "jsonl",
            events_file=args.events_file,
            live=not args.plain and stderr.isatty(),
        )
    except ConfigError as exc:
        return _config_error(exc, stderr)
    async with anyio.create_task_group() as tg:
        if interrupt is None:
            interrupt = anyio.Event()
            tg.start_soon(_watch_signals, interrupt)
        code = await _guarded(config, options, stdout, stderr, interrupt)
        tg.cancel_scope.cancel()  # stop watching signals
    return code


async def _guarded(
    config: TeamConfig, options: RunOptions, stdout: TextIO, stderr: TextIO, stop: anyio.Event
) -> int:
    """Run the goal; errors become exit codes (inside the task group, so none escapes it)."""
    from regiment.cli._run import drive

    try:
        outcome = await drive(config, options, stdout=stdout, stderr=stderr, stop=stop)
    except ConfigError as exc:
        return _config_error(exc, stderr)
    except RegimentError as exc:
        print(f"regiment: run failed: {type(exc).__name__}: {exc}", file=stderr)
        return EXIT_FAILED
    return _exit_code(outcome)


async def _serve_mcp(
    config: TeamConfig, args: argparse.Namespace, environ: Mapping[str, str], stderr: TextIO
) -> int:
    """``regiment mcp``: serve the team until the client leaves (see ``regiment._mcp_serve``)."""
    require_mcp()
    from regiment._mcp_serve import serve_team  # the mcp extra, only for this command

    model = _choose_model(config, args.team_file, args.model, environ, stderr)
    team = build_team(config, model=model, source=args.team_file)
    try:
        await serve_team(team, http_port=args.http, stderr=stderr)
    except RegimentError as exc:
        if isinstance(exc, ConfigError):
            raise
        print(f"regiment: mcp: {type(exc).__name__}: {exc}", file=stderr)
        return EXIT_FAILED
    return EXIT_OK


def _config_error(exc: ConfigError, stderr: TextIO) -> int:
    # One line, whatever a user's module put in the message it raised while importing.
    print("regiment: error: " + " ".join(str(exc).splitlines()), file=stderr)
    return EXIT_USAGE


def _exit_code(outcome: Outcome) -> int:
    match outcome:
        case "done":
            return EXIT_OK
        case "failed":
            return EXIT_FAILED
        case "interrupted":
            return EXIT_INTERRUPTED


def _choose_model(
    config: TeamConfig,
    source: str,
    option: str | None,
    environ: Mapping[str, str],
    stderr: TextIO,
) -> str | None:
    """``--model`` if given; the files' brains when the tree wants Claude and there is no key.

    The fallback needs a brain in every file of the tree (nested team files
    included), since ``scripted`` makes each file answer with its own.
    """
    if option:
        return option
    files = team_files(config, source=source)
    wants_claude = any(
        spec.startswith("anthropic:") for _, c in files for spec in c.model_specs().values()
    )
    if wants_claude and not environ.get("ANTHROPIC_API_KEY") and all(c.brain for _, c in files):
        brains = ", ".join(f"{name}: {c.brain}" for name, c in files)
        print(
            "regiment: no ANTHROPIC_API_KEY and no --model, so running offline on the "
            f"team's scripted brain ({brains})",
            file=stderr,
        )
        return "scripted"
    return None


def _validate(config: TeamConfig, source: str, stdout: TextIO) -> int:
    team = check_config(config, source=source)
    print(f"{source}: ok, team '{team.name}'", file=stdout)
    specs = config.model_specs()
    print(
        f"  planner: {specs['planner.model']}, at most {team.planner.max_steps} steps", file=stdout
    )
    for index, (entry, worker) in enumerate(zip(config.workers, team.workers, strict=True)):
        tools = ", ".join(worker.capabilities) or "no tools"
        # A team worker's models are in its own file (checked above, with this one).
        uses = f"team file {entry.team}" if entry.team else specs[f"workers[{index}].model"]
        print(f"  worker {worker.name}: {uses}; {tools}", file=stdout)
    for name, check in team.checks.items():
        print(f"  check {name}: {check.description}", file=stdout)
    return EXIT_OK


def _add_import_root(app_dir: str) -> None:
    """Make the file's ``module:attribute`` paths importable from ``app_dir`` (as uvicorn does)."""
    root = str(Path(app_dir).resolve())
    if root not in sys.path:
        sys.path.insert(0, root)


async def _watch_signals(interrupt: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            interrupt.set()
            return
