"""The ``regiment`` command (also ``python -m regiment``).

::

    regiment run TEAM_FILE "goal" [--model SPEC] [--trace jaeger|console|none]
                                  [--events jsonl [--events-file PATH] [--events-deltas]]
                                  [--plain] [-v|-vv] [--backend asyncio|trio] [--app-dir DIR]
                                  [--session S] [--journal PATH_OR_URL | --no-journal]
                                  [--approve pause|ask] [--workers local|ray [--ray-address ADDR]]
    regiment resume [TEAM_FILE] RUN_ID [--force] [the options of run but --session and
                                       --no-journal; --approve ask too]
    regiment runs [--status S] [--limit N] [--json] [--journal PATH_OR_URL]
    regiment show RUN_ID [--json] [--journal PATH_OR_URL]
    regiment validate TEAM_FILE [--app-dir DIR]
    regiment mcp TEAM_FILE [--model SPEC] [--http PORT] [--journal J | --no-journal]
                 [--backend asyncio|trio] [--trace jaeger|none] [--app-dir DIR]
    regiment serve TEAM_FILE [--host H] [--port P] [--token T] [--journal J | --no-journal]
                   [--lease-ttl S] [--keep-runs N] [--model SPEC] [--trace jaeger|none]
                   [--app-dir DIR] [-v|-vv]
    regiment approvals [RUN_ID] [--json] [--limit N] [--journal PATH_OR_URL]
    regiment approve RUN_ID REQUEST_ID [--deny REASON | --edit JSON_OBJECT] [--by NAME]
                     [--team TEAM_FILE] [--app-dir DIR] [--journal PATH_OR_URL]

Exit codes: 0 the run finished (its answer is on stdout), 1 the run failed
(the reason is on stderr), 2 a usage or config error (its last line on stderr,
as for every command: ``regiment: error: ...``), 3 the run paused for
approvals (``regiment approvals RUN_ID`` lists them), 4 another process took the run
over and finishes it (``regiment show RUN_ID`` follows it), 5 stopped unfinished,
resumable, 130 interrupted (Ctrl-C cancels the run cleanly and says how far it got),
141 its reader closed stdout, 143 terminated (SIGTERM). Each command's ``--help`` lists
its own.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO, TypeVar

import anyio

from regiment._logging import SHOWN, level_for, logging_to
from regiment._signals import EXIT_TERMINATED, leave_on_signal
from regiment.cli._approvals import approval_command
from regiment.cli._args import parse as parse_command
from regiment.cli._codes import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    config_error,
    exit_code,
    run_error,
    typeable,
)
from regiment.cli._exit import (
    EXIT_INTERRUPTED,
    LastWords,
    Terminated,
    interrupted,
    reader_left,
    signal_exit_code,
    slow_stop_notice,
    stand_in_for_closed_streams,
    stdout_closed,
    terminated_raises,
    wait_for_tool_threads,
    watch_signals,
)
from regiment.cli._hints import journal_flag, journal_reader
from regiment.cli._journal_cmds import journal_flag_error, journal_read, service_journal
from regiment.cli._options import choose_model, placed, run_options
from regiment.cli._printed import printed
from regiment.cli._resume import add_import_root as _add_import_root
from regiment.cli._resume import fill_in_team_file, team_file_of
from regiment.cli._validate import validate, validate_command
from regiment.errors import (
    ApprovalError,
    ConfigError,
    JournalError,
    RegimentError,
    ToolError,
)
from regiment.tools import require_mcp

if TYPE_CHECKING:
    from regiment.cli._run import RunOptions
    from regiment.config import TeamConfig

__all__ = ("main", "run_async")

_T = TypeVar("_T")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``regiment`` command line; returns the exit code."""
    stand_in_for_closed_streams("stderr")
    try:
        code = _main(argv)
    except BaseException as exc:
        if reader_left(exc):
            return stdout_closed()
        if not interrupted(exc) and not isinstance(exc, Terminated):
            raise
        # Before the signal watcher was up (validate, a team file's imports): no traceback.
        print("regiment: interrupted", file=sys.stderr)
        code = EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    wait_for_tool_threads(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = parse_command(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, already explained)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command != "mcp":  # which needs a stdout to serve on: without one, it says so
        stand_in_for_closed_streams("stdout")
    if args.command == "validate":
        # Reading a file and importing its tools needs no event loop, so no asyncio and
        # no anyio backend get imported for it (issue #22).
        validating = functools.partial(validate_command, args, sys.stdout, sys.stderr)
        return terminated_raises(validating)
    backend = getattr(args, "backend", "asyncio")
    run = functools.partial(
        _dispatch,
        args,
        stdout=sys.stdout,
        stderr=sys.stderr,
        environ=os.environ,
        interrupt=None,
        stdin=sys.stdin,
    )
    return anyio.run(run, backend=backend)


async def run_async(
    argv: Sequence[str],
    *,
    stdout: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str] | None = None,
    interrupt: anyio.Event | None = None,
    stdin: TextIO | None = None,
) -> int:
    """The command inside a running event loop (what ``main`` runs; tests call it directly).

    Args:
        argv: the arguments after ``regiment``.
        stdout: where the answer (or ``--events jsonl`` lines) go.
        stderr: where progress, notes and errors go.
        environ: the environment (``ANTHROPIC_API_KEY`` decides the offline fallback).
        interrupt: setting it cancels the run as Ctrl-C does; ``None`` watches
            SIGINT and SIGTERM instead.
        stdin: where ``--approve ask`` reads answers (default: ``sys.stdin``).
    """
    try:
        args = parse_command(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    env = os.environ if environ is None else environ
    return await _dispatch(
        args,
        stdout=stdout,
        stderr=stderr,
        environ=env,
        interrupt=interrupt,
        stdin=sys.stdin if stdin is None else stdin,
    )


async def _dispatch(
    args: argparse.Namespace,
    *,
    stdout: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str],
    interrupt: anyio.Event | None,
    stdin: TextIO,
) -> int:
    if args.command in ("approvals", "approve"):
        return await _approvals_command(args, stdout, stderr, environ, interrupt)
    try:
        # `regiment resume RUN_ID`: the run's file (nothing to wind down while it is read)
        await _leaving(
            functools.partial(fill_in_team_file, args, environ), interrupt, _left(stderr)
        )
        _add_import_root(getattr(args, "app_dir", None))
        if args.command in ("runs", "show"):
            read = functools.partial(printed, journal_reader(args, environ), args.command)
            return await _leaving(functools.partial(read, stdout, stderr), interrupt, _left(stderr))
        from regiment.config import load_config  # not for runs/show (#22)

        config = load_config(args.team_file)
        if args.command == "validate":
            return validate(config, args.team_file, stdout)
        if args.command == "mcp":
            return await _serve_mcp(config, args, environ, stderr, interrupt)
        if args.command == "serve":
            return await _serve_http(config, args, environ, stderr, interrupt)
        config = placed(args, config)
        options = run_options(args, config, stdin, stderr, environ)
    except ConfigError as exc:
        return config_error(exc, stderr)
    last_words, got = LastWords(), list[int]()
    async with anyio.create_task_group() as tg:
        if interrupt is None:
            interrupt = anyio.Event()
            tg.start_soon(watch_signals, interrupt, last_words, got)
        with (
            slow_stop_notice(stderr),
            # Without -v, only the SDKs' warnings (one line each, not a traceback), and a
            # forced resume's (what changed in the team).
            logging_to(stderr, level_for(args.verbose), None if args.verbose else SHOWN),
        ):
            code = await _guarded(config, options, stdout, stderr, (interrupt, last_words))
        tg.cancel_scope.cancel()  # stop watching signals
    # Stopped by SIGTERM (`kill`, `timeout`, a service manager): 143, not Ctrl-C's 130.
    return signal_exit_code(got[0]) if code == EXIT_INTERRUPTED and got else code


async def _leaving(
    work: Callable[[], Awaitable[_T]], interrupt: anyio.Event | None, say: Callable[[], None]
) -> _T:
    """``work()``, which has nothing to wind down (it reads the journal, or records one
    decision): a Ctrl-C or SIGTERM meanwhile exits at once after ``say()`` (see
    ``leave_on_signal``). With an ``interrupt`` of the caller's, no signal is watched."""
    if interrupt is not None:
        return await work()
    failed: Exception | None = None  # raised as it is, not in the task group's exception group
    async with anyio.create_task_group() as tg:
        tg.start_soon(leave_on_signal, say)
        try:
            done = await work()
        except Exception as exc:  # a ConfigError, say: the caller explains it
            failed = exc
        tg.cancel_scope.cancel()
    if failed is not None:
        raise failed
    return done


def _left(
    stderr: TextIO,
    args: argparse.Namespace | None = None,
    environ: Mapping[str, str] | None = None,
) -> Callable[[], None]:
    """What a command left at a signal says: ``approve`` (given its ``args``), where to
    see whether its decision was recorded (a transaction: whole, or not at all)."""
    line = "regiment: interrupted"
    if args is not None and environ is not None and args.command == "approve":
        flag = journal_flag(journal_read(args, environ), environ)
        see = f"`regiment approvals {shlex.quote(args.run_id)}` lists the request while it waits"
        line += f"; the decision was not recorded, or recorded whole: {typeable(see, flag)}"
    return functools.partial(print, line, file=stderr, flush=True)


async def _guarded(
    config: TeamConfig,
    options: RunOptions,
    stdout: TextIO,
    stderr: TextIO,
    stop: tuple[anyio.Event, LastWords],
) -> int:
    """Run the goal; errors become exit codes (inside the task group, so none escapes it)."""
    from regiment.cli._run import drive

    try:
        outcome = await drive(
            config, options, stdout=stdout, stderr=stderr, stop=stop[0], last_words=stop[1]
        )
    except RegimentError as exc:
        return run_error(exc, options.resume, stderr, options.journal_flag)
    return exit_code(outcome)


async def _serve_http(
    config: TeamConfig,
    args: argparse.Namespace,
    environ: Mapping[str, str],
    stderr: TextIO,
    stop: anyio.Event | None,
) -> int:
    """``regiment serve``: serve the team under uvicorn until ``stop`` is set or, without
    one, a signal comes (see ``regiment.serve.serve_command``)."""
    from regiment.cli._serve_trace import serve_tracing  # the tracing SDK: only here
    from regiment.config import build_team
    from regiment.serve import serve_command  # the serve extra: only here

    notes: list[str] = []  # said once it serves, after any refusal (the only line)
    model = choose_model(config, args.team_file, args.model, environ, stderr, notes)
    args.journal, source = service_journal(args, environ)
    with serve_tracing(args.trace, config, stderr) as (config, telemetry):
        team = build_team(config, model=model, telemetry=telemetry, source=args.team_file)
        try:
            return await serve_command(
                team, args, environ=environ, stderr=stderr, stop=stop, note="".join(notes)
            )
        except JournalError as exc:  # it could not be opened: nothing was served
            return config_error(journal_flag_error(args.journal, exc, source), stderr)
        except ToolError as exc:  # an MCP server could not be started: nothing ran
            from regiment.cli._start_error import start_error  # loads the hierarchy

            raise start_error(exc, team, args.team_file) from exc


async def _serve_mcp(
    config: TeamConfig,
    args: argparse.Namespace,
    environ: Mapping[str, str],
    stderr: TextIO,
    stop: anyio.Event | None,
) -> int:
    """``regiment mcp``: serve the team until the client leaves, ``stop`` is set or, without
    one, a signal comes (see ``regiment.cli._mcp_serve``)."""
    require_mcp()
    from regiment.cli._mcp_serve import serve_team  # the mcp extra, only for this command
    from regiment.cli._serve_trace import serve_tracing  # the tracing SDK: only with --trace
    from regiment.config import build_team

    notes: list[str] = []  # said once it serves, after any refusal (the only line)
    model = choose_model(config, args.team_file, args.model, environ, stderr, notes)
    args.journal, source = service_journal(args, environ)
    try:
        # Not the global provider: the MCP SDK's spans of each message (initialize, tools/list,
        # ...) would be a trace each. A run's root is parented by the client's _meta.
        with serve_tracing(args.trace, config, stderr) as (config, telemetry):
            team = build_team(config, model=model, telemetry=telemetry, source=args.team_file)
            return await serve_team(
                team,
                http_port=args.http,
                stderr=stderr,
                journal=args.journal,
                team_file=team_file_of(args.team_file, args.app_dir),
                stop=stop,
                note="".join(notes),
                source=args.team_file,
            )
    except JournalError as exc:  # it could not be opened: nothing was served
        raise journal_flag_error(args.journal, exc, source) from exc
    except RegimentError as exc:
        if isinstance(exc, ConfigError):
            raise
        stopped = RegimentError(f"the MCP server stopped: {type(exc).__name__}: {exc}")
        return config_error(stopped, stderr, code=EXIT_FAILED)


async def _approvals_command(
    args: argparse.Namespace,
    stdout: TextIO,
    stderr: TextIO,
    environ: Mapping[str, str],
    interrupt: anyio.Event | None,
) -> int:
    """``regiment approvals`` / ``regiment approve``, its output checked as written."""
    try:
        _add_import_root(getattr(args, "app_dir", None))
    except ConfigError as exc:
        return config_error(exc, stderr)
    decided = functools.partial(_approvals, args, stderr=stderr, environ=environ)
    decide = functools.partial(printed, decided, args.command, stdout, stderr)
    return await _leaving(decide, interrupt, _left(stderr, args, environ))


async def _approvals(
    args: argparse.Namespace, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str]
) -> int:
    """``regiment approvals`` / ``regiment approve``: over the journal, no run started."""
    try:
        team = None
        if getattr(args, "team", None):
            from regiment.config import build_team, load_config

            team = build_team(load_config(args.team), model="scripted", source=args.team)
        await approval_command(args, team, stdout, environ, stderr)
    except (ConfigError, ApprovalError, JournalError) as exc:
        return config_error(exc, stderr)
    return EXIT_OK
