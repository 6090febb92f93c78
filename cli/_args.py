"""The ``regiment`` command's arguments: one parser, its commands and their options."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from regiment._version import __version__
from regiment.cli._approvals import add_approval_commands
from regiment.cli._journal_cmds import add_journal_commands, add_journal_option, add_service_journal
from regiment.cli._journal_cmds import whole_number as _whole_number
from regiment.errors import ConfigError

__all__ = ("parse", "parser", "session_of")

_TEAM_FILE = "a .toml, .yaml or .yml team file"
_APP_DIR = "where the file's module:attribute paths are imported from (default: .)"
_BACKEND = "the event loop to run on (default: asyncio)"

_READER_LEFT = "141 its reader closed stdout (`| head`)"
_SIGNALLED = "130 interrupted (Ctrl-C), 143 terminated (SIGTERM)"
_RUN_EXITS = (
    "0 done (a partial run too, with a note), 1 run failed (or its answer could not be "
    "written), 2 usage or config error, 3 paused for approvals, 4 taken over by another "
    "process (it finishes the run), 5 stopped unfinished, resumable (its Ray cluster went "
    "away: `regiment resume` it once the cluster is back), 130 interrupted (Ctrl-C), "
    f"{_READER_LEFT}, 143 terminated (SIGTERM)"
)
_UNWRITTEN = "1 what it prints could not be written (a full disk, a closed stdout)"
_READ_EXITS = f"0 done, {_UNWRITTEN}, 2 usage error or a journal that cannot be read"
_SERVER_SIGNALS = "130 interrupted (Ctrl-C), 143 a second signal that was a SIGTERM"
# Each command's --help ends with what its exit codes mean (test_help_exits.py checks).
_EXITS = {
    "run": _RUN_EXITS,
    "resume": _RUN_EXITS,
    "runs": f"{_READ_EXITS}, {_SIGNALLED}, {_READER_LEFT}",
    "show": f"{_READ_EXITS}, or a run it does not have, {_SIGNALLED}, {_READER_LEFT}",
    "approvals": f"{_READ_EXITS}, {_SIGNALLED}, {_READER_LEFT}",
    "approve": f"0 decided, {_UNWRITTEN} (the decision was recorded), 2 usage error, an "
    "unknown or already decided request, an invalid edit, or a journal that cannot be "
    f"written, {_SIGNALLED} (the decision recorded whole or not at all), {_READER_LEFT}",
    "mcp": "0 stopped (the client closed stdin, or SIGTERM), 1 the server failed, 2 usage or "
    f"config error (a team that cannot start too), {_SERVER_SIGNALS}",
    "serve": "0 stopped (SIGTERM), 2 usage or config error (a team that cannot start, a port "
    f"in use too), {_SERVER_SIGNALS}",
    "validate": f"0 the file is good (a summary of the team follows), {_UNWRITTEN}, 2 it "
    f"is not (the error names the file, the line and the key), {_SIGNALLED}, {_READER_LEFT}",
}

# What to say when an option of one command is given to another.
_HINTS = {
    ("resume", "--session"): "a resumed run keeps the session it was started with",
    ("resume", "--no-journal"): "regiment resume continues a journaled run: drop --no-journal",
}


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors end with the line every other error of the
    command has, ``regiment: error: ...``, instead of argparse's ``regiment run: error:``
    (the usage above it names the command). Its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"regiment: error: {message}; see `{self.prog} --help`\n")


def parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
        prog="regiment",
        description="Run a team of agents declared in a TOML or YAML file.",
        epilog="exit codes: 0 done, 1 run failed, 2 usage or config error, "
        "3 paused for approvals, 4 taken over by another process (it finishes the run), "
        "5 stopped unfinished, resumable (`regiment resume` it), "
        f"130 interrupted (Ctrl-C), {_READER_LEFT}, 143 terminated (SIGTERM)",
    )
    parser.add_argument("--version", action="version", version=f"regiment {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run one goal and print the answer")
    run.add_argument("team_file", metavar="TEAM_FILE", help=_TEAM_FILE)
    run.add_argument("goal", metavar="GOAL", help="what the team should do")
    run.add_argument("--session", metavar="S", help="the session the run belongs to")
    _add_run_options(run, can_turn_off=True)
    resume = commands.add_parser(
        "resume", help="finish a journaled run that stopped or paused for approvals"
    )
    resume.add_argument(
        "team_file",
        metavar="TEAM_FILE",
        nargs="?",
        help="the team file to build the team from (default: the one `regiment run` "
        "started the run from, as the journal records it)",
    )
    resume.add_argument("run_id", metavar="RUN_ID", help="as `regiment runs` lists it")
    resume.add_argument(
        "--force", action="store_true", help="resume even if the team file changed since"
    )
    _add_run_options(resume, can_turn_off=False)  # it continues a journaled run
    add_journal_commands(commands)
    add_approval_commands(commands)
    _add_server_commands(commands)
    validate = commands.add_parser("validate", help="check a team file without running it")
    validate.add_argument("team_file", metavar="TEAM_FILE", help=_TEAM_FILE)
    validate.add_argument("--app-dir", metavar="DIR", default=".", help=_APP_DIR)
    _describe(commands)
    return parser


def _describe(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Each command's ``--help`` says what it does (the line ``regiment --help`` lists it
    with) and what its exit codes mean."""
    for listed in commands._choices_actions:
        command = commands.choices[listed.dest]
        assert listed.help is not None
        command.description = f"{listed.help[0].upper()}{listed.help[1:]}."
        command.epilog = f"exit codes: {_EXITS[listed.dest]}"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line parsed; an option the command does not take, or options that do
    not go together, are that command's usage error (its usage, then ``regiment: error:
    ...; see `regiment resume --help```), not the top-level usage."""
    top = parser()
    args, extra = top.parse_known_args(argv)
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    if extra:
        message = f"unrecognized arguments: {' '.join(extra)}"
        hints = [h for (c, o), h in _HINTS.items() if c == args.command and o in extra]
        commands.choices[args.command].error("; ".join([message, *hints]))
    clash = _clash(args)
    if clash:
        commands.choices[args.command].error(clash)
    return args


def _clash(args: argparse.Namespace) -> str | None:
    """Options that do not go together, said as a usage error before the team file is read
    (it said only ``regiment: error: ...``, after the file's imports, without the usage)."""
    if args.command == "mcp":
        http_on_trio = args.http is not None and args.backend != "asyncio"
        return "--http needs --backend asyncio (uvicorn runs on asyncio)" if http_on_trio else None
    if args.command not in ("run", "resume"):
        return None
    if args.events_file and args.events != "jsonl":
        return "--events-file needs --events jsonl"
    if args.events_deltas and args.events != "jsonl":
        return "--events-deltas needs --events jsonl"
    if args.ray_address is not None and args.workers != "ray":
        return "--ray-address needs --workers ray"
    if args.workers == "ray" and args.backend == "trio":
        return "--workers ray needs --backend asyncio (the default; Ray has no trio)"
    return None


def _add_run_options(run: argparse.ArgumentParser, *, can_turn_off: bool) -> None:
    """What ``run`` and ``resume`` share: model, trace, events, view, backend, journal
    (``--no-journal`` too if ``can_turn_off``), and how a call that needs approval is
    decided."""
    add_journal_option(run, can_turn_off=can_turn_off)
    run.add_argument(
        "--approve",
        choices=("pause", "ask"),
        default="pause",
        help="a call that needs approval: pause the run (exit 3; the default) or ask on "
        "this terminal: approve? [y]es / [n]o / [e]dit JSON",
    )
    run.add_argument(
        "--model",
        metavar="SPEC",
        type=_spec,
        help="the model for every role: 'anthropic:<model id>', 'openai:<model id>', "
        "'openai-compatible:<model id>' (at OPENAI_BASE_URL) or 'scripted' (the file's brain)",
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
        "--events-deltas",
        action="store_true",
        help="with --events jsonl: include every TextDelta (each piece of a model's reply)",
    )
    run.add_argument(
        "--plain", action="store_true", help="plain event lines even on a terminal (no live view)"
    )
    run.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio", help=_BACKEND)
    _add_verbose(run)
    run.add_argument(
        "--workers",
        choices=("local", "ray"),
        default="local",
        help="ray: place every worker on Ray (the ray extra; asyncio only); default: local",
    )
    run.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --workers ray: the cluster to join (default: a running one, else a new "
        "local one); a cluster with token auth needs RAY_AUTH_MODE=token and its token",
    )
    run.add_argument(
        "--app-dir",
        metavar="DIR",
        help="where the file's module:attribute paths are imported from (default: ., or "
        "for `resume RUN_ID` the directory the run was started with)",
    )


def _add_server_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``regiment mcp`` and ``regiment serve``: a team behind a protocol."""
    mcp = commands.add_parser("mcp", help="serve the team as one MCP tool, run(goal), over stdio")
    mcp.add_argument("team_file", metavar="TEAM_FILE", help=_TEAM_FILE)
    mcp.add_argument("--model", metavar="SPEC", type=_spec, help="as for run", action=_Once)
    mcp.add_argument(
        "--http",
        metavar="PORT",
        type=_port,
        help="streamable HTTP on 127.0.0.1:PORT (0: a free port)",
        action=_Once,
    )
    mcp.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help=f"{_BACKEND}; --http needs asyncio",
        action=_Once,
    )
    mcp.add_argument("--app-dir", metavar="DIR", default=".", help=_APP_DIR, action=_Once)
    _add_trace(mcp, "each run's", " (parented by the client's _meta traceparent)")
    what = ": a run that pauses for approvals waits there for `regiment approve`, and the tool "
    add_service_journal(mcp, what=f"{what}resume(run_id) finishes it", once=_Once)
    _add_serve(commands)


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``regiment serve``: the team as a web service. (A server command's option that takes
    a value is refused when given twice, ``_Once``.)"""
    serve = commands.add_parser("serve", help="serve the team over HTTP (runs, events, cancel)")
    serve.add_argument("team_file", metavar="TEAM_FILE", help=_TEAM_FILE)
    serve.add_argument("--model", metavar="SPEC", type=_spec, help="as for run", action=_Once)
    serve.add_argument(
        "--host",
        type=_host,
        default="127.0.0.1",
        help="default 127.0.0.1 (others need a token)",
        action=_Once,
    )
    serve.add_argument(
        "--port", type=_port, default=8000, help="default 8000 (0: a free port)", action=_Once
    )
    add_service_journal(serve, what="", once=_Once)
    serve.add_argument(
        "--token", metavar="T", help="bearer token (default: $REGIMENT_TOKEN)", action=_Once
    )
    serve.add_argument(
        "--lease-ttl",
        metavar="S",
        type=_lease_ttl,
        help="seconds a journaled run stays this service's without a heartbeat (default 30; "
        "needs --journal): how long another service waits before it takes the runs of one "
        "that died on another machine over",
        action=_Once,
    )
    serve.add_argument(
        "--keep-runs",
        metavar="N",
        type=_whole_number,
        help="ended runs kept in memory (default 1000; the journal keeps them all)",
        action=_Once,
    )
    _add_trace(serve, "each run's", "")
    serve.add_argument("--app-dir", metavar="DIR", default=".", help=_APP_DIR, action=_Once)
    _add_verbose(serve, default="INFO")


def _add_trace(parser: argparse.ArgumentParser, whose: str, parent: str) -> None:
    parser.add_argument(
        "--trace",
        action=_Once,
        choices=("jaeger", "none"),
        default="none",
        help=f"jaeger: export {whose} spans and metrics over OTLP/HTTP (localhost:4318, "
        f"or OTEL_EXPORTER_OTLP_ENDPOINT){parent}",
    )


class _Once(argparse._StoreAction):
    """An option of a long-running server command (``mcp``, ``serve``) that takes one
    value: given twice (``--http 8001 ... --http 8002``, a script's default and an
    override, say) it is a usage error, not the last one silently winning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.given: str | None = None

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if self.given is not None:  # (no values in the message: one may be the --token)
            named = (
                self.given if self.given == option_string else f"{self.given}, then {option_string}"
            )
            parser.error(f"{named} is given twice; give it once (which one was meant?)")
        self.given = option_string or self.dest
        super().__call__(parser, namespace, values, option_string)


def _add_verbose(
    parser: argparse.ArgumentParser,
    # It said "warnings only": regiment's own warnings show only with -v (the progress
    # lines and the notes after the answer say what went wrong).
    default: str = "none, but the MCP SDK's warnings",
) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help=f"log to stderr: -v INFO, -vv DEBUG (default: {default})",
    )


def session_of(args: argparse.Namespace) -> str | None:
    """``--session``, refused when blank (the library's advice is for code and the service)."""
    session: str | None = getattr(args, "session", None)
    if session is not None and not session.strip():
        raise ConfigError(
            f"--session: the session is blank ({session!r}); give the id the run's "
            "conversation goes by, or leave --session out for a run of no session"
        )
    return session


def _port(text: str) -> int:
    """A TCP port, 0 to 65535 (argparse turns the error into a usage line, exit 2)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 0 to 65535")
    return port


def _spec(text: str) -> str:
    """A model spec: not blank (which would quietly mean the file's own models)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("it is blank; give a model spec, or leave it out")
    return text


def _host(text: str) -> str:
    """An address to bind to: not blank (which no server binds to, by that name)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("it is blank; give an address, such as 127.0.0.1")
    return text


def _lease_ttl(text: str) -> float:
    """Seconds, at least 1: a shorter lease lapses in an ordinary slow commit, and another
    service sharing the journal would take this one's live runs over."""
    try:
        ttl = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(ttl):
        raise argparse.ArgumentTypeError(f"not a finite number of seconds: {text!r}")
    if ttl < 1:
        raise argparse.ArgumentTypeError(
            f"{text} s is too short: give at least 1 (a shorter lease lapses in an ordinary "
            "slow commit, and another service would take this one's live runs over)"
        )
    return ttl
