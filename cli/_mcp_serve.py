"""A whole team served as MCP tools: ``run(goal)``, and ``resume(run_id)`` when the
server journals its runs. What ``regiment mcp`` serves.

Any MCP client (Claude Desktop, another agent framework, the SDK's own client)
can then hand a goal to the team and get its answer back, with a progress
notification per finished step while it runs. The server is a thin adapter
over the public API: the tools call ``running.stream(goal)`` and
``running.resume_stream(run_id)`` like any user.

A run that pauses for approvals ends its tool call with what to do: with a
journal, the run id, the requests and the commands a person decides them with,
after which the client calls ``resume``; without one, an error saying the run
cannot go on (nothing would keep it until a decision). A run that another process
took over (this server was frozen past its lease) ends its call with an error that
says the run goes on there, who runs it, and how to follow it.

This module imports the ``mcp`` SDK at the top; the CLI imports it only for
``regiment mcp``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from functools import partial
from typing import Any, TextIO

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError
from mcp.types import CallToolResult, InputRequiredResult

from regiment._logging import logging_to
from regiment._shown import shown_spec
from regiment._signals import EXIT_INTERRUPTED, watch_signals
from regiment._text import counted
from regiment.cli._mcp_calls import Calls
from regiment.cli._start_error import start_error
from regiment.errors import ConfigError, LeaseLost, RegimentError, ToolError
from regiment.hierarchy import (
    CheckFailed,
    Event,
    PlanCreated,
    RunCompleted,
    RunEvents,
    RunFailed,
    RunningTeam,
    RunResult,
    StepCompleted,
    StepErrored,
    Team,
)
from regiment.journal import TeamFile
from regiment.telemetry import joined_trace

__all__ = ("Calls", "serve_team", "team_server")

logger = logging.getLogger("regiment.mcp")


def team_server(
    running: RunningTeam, *, journal: str | None = None, calls: Calls | None = None
) -> SDKServer:
    """An MCP server with the tool ``run(goal)`` that runs ``running``'s team; with
    ``journal`` (where ``running``'s runs are journaled), ``resume(run_id)`` too.
    ``calls``: where the calls in flight are kept, for a stop to cancel them."""
    team = running.team
    calls = Calls() if calls is None else calls
    # The SDK's server calls logging.basicConfig: a RichHandler on the root logger, which
    # wrapped regiment's warnings over several lines. With a handler there, it adds none.
    placeholder = logging.NullHandler()
    logging.getLogger().addHandler(placeholder)
    try:
        server: SDKServer = _TeamServer(
            team.name, instructions=f"The team '{team.name}'; call run(goal).", log_level="WARNING"
        )
    finally:
        logging.getLogger().removeHandler(placeholder)

    async def run(goal: str, ctx: Context) -> str:
        """Run the team on the goal and return its answer."""
        _only(ctx, "run", "goal")
        with calls.cut_short(ctx.request_id), joined_trace(_w3c(ctx)):
            return await _answer(running.stream(goal), ctx, journal)

    workers = "; ".join(f"{w.name}: {w.description}" for w in team.workers)
    server.add_tool(
        run,
        name="run",
        description=f"Hand a goal to the team '{team.name}' (workers: {workers}); "
        "returns the team's answer. Progress is reported per finished step.",
    )
    if journal is not None:

        async def resume(run_id: str, ctx: Context) -> str:
            """Finish a run of this team that paused for approvals (or whose server died)."""
            _only(ctx, "resume", "run_id")
            with calls.cut_short(ctx.request_id), joined_trace(_w3c(ctx)):
                return await _answer(running.resume_stream(run_id), ctx, journal)

        server.add_tool(
            resume,
            name="resume",
            description=f"Finish a run of the team '{team.name}' that paused for approvals "
            "once a person has decided them (or whose server stopped), by the run id the "
            "paused run's result gave; returns the team's answer.",
        )
    return server


_TAKES = {"run": "goal", "resume": "run_id"}  # each tool's one argument


class _TeamServer(SDKServer):
    """The SDK's server, but a call of ``run`` or ``resume`` without its one string
    argument is told what to send (the SDK answered with pydantic's ``Field required``
    and a link to pydantic's pages)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        takes = _TAKES.get(name)
        if takes is not None and not isinstance(arguments.get(takes), str):
            given = "is missing" if takes not in arguments else "is not a string"
            logger.info("refused a call of %s: its %r %s", name, takes, given)
            raise SDKToolError(
                f"{name} takes one argument, {takes!r}, a string, and {takes!r} {given}: "
                f'call it with {{"{takes}": "..."}}; nothing was run'
            )
        return await super().call_tool(name, arguments, context)


def _only(ctx: Context, tool: str, takes: str) -> None:
    """Refuse a call of ``tool`` with an argument other than ``takes`` (the SDK drops an
    unknown one without a word: ``run(goal, session=...)`` ran with no session, and the
    client, a model often, believed it had one)."""
    params = ctx.request_context.params or {}
    given = params.get("arguments") or {}
    extra = [repr(name) for name in given if name != takes] if isinstance(given, dict) else []
    if extra:
        logger.info("refused a call of %s with %s", tool, ", ".join(extra))
        raise SDKToolError(
            f"{tool} takes one argument, {takes!r}, not {', '.join(extra)}: call it with "
            f'{{"{takes}": "..."}} alone; nothing was run'
        )


def _w3c(ctx: Context) -> dict[str, str]:
    """The W3C trace context a client sent in the request's ``_meta`` (as the OpenTelemetry
    MCP conventions carry it): a traced run joins the client's trace."""
    meta = ctx.request_context.meta or {}
    return {k: v for k in ("traceparent", "tracestate") if isinstance(v := meta.get(k), str)}


async def _answer(
    opened: AbstractAsyncContextManager[RunEvents], ctx: Context, journal: str | None
) -> str:
    """The run's answer, or what to do for a run that paused; an ``SDKToolError``
    (the client is told why) for a run that failed or could not start."""
    try:
        return await _follow(opened, ctx, journal)
    except RegimentError as exc:  # an empty goal, an unknown run id, ...
        if isinstance(exc.__cause__, LeaseLost):  # its stream's close says whose it is now
            raise SDKToolError(_elsewhere(str(exc))) from exc
        raise SDKToolError(f"{type(exc).__name__}: {exc}") from exc


async def _follow(
    opened: AbstractAsyncContextManager[RunEvents], ctx: Context, journal: str | None
) -> str:
    progress = _Progress()
    async with opened as events:
        async for event in events:
            message = progress.see(event)
            if message is not None:
                await ctx.report_progress(progress.done, progress.total, message)
            match event:
                case RunCompleted(result=result):
                    return result.answer if result.status != "paused" else _paused(result, journal)
                case RunFailed(error_type="LeaseLost", message=text):
                    raise SDKToolError(_elsewhere(text))  # not a failure
                case RunFailed(error_type=kind, message=text):
                    raise SDKToolError(f"the run failed: {kind}: {text}")
                case _:
                    pass
    raise SDKToolError("the run ended without a result")


def _elsewhere(message: str) -> str:
    """What the client is told of a run another process took over: it goes on there, run
    by whom the journal's words name, and how to follow it (the run's words name this
    server's journal, its URL's password left out)."""
    return f"the run goes on elsewhere: {message}"


def _paused(result: RunResult, journal: str | None) -> str:
    """What a run that paused for approvals tells the client: how it goes on (a
    ``SDKToolError`` if it cannot, the server keeping no journal)."""
    pending = result.pending_approvals
    calls = ", ".join(f"{r.tool_name} ({r.request_id})" for r in pending)
    if journal is None:
        raise SDKToolError(
            f"the run paused: {counted(len(pending), 'tool call')} {'needs' if len(pending) == 1 else 'need'} "
            f"a person's approval ({calls}), "
            "but this server keeps no journal, so no decision can reach the run and it "
            "cannot go on; serve the team with `regiment mcp TEAM_FILE --journal runs.db` "
            "to decide them with `regiment approve` and finish the run with resume(run_id)"
        )
    run_id, journal = result.run_id, shown_spec(journal)  # without a URL's password
    return (
        f"paused: run {run_id} waits for {counted(len(pending), 'approval')}: {calls}. A person "
        f"decides each with `regiment approve {run_id} REQUEST_ID --journal {journal}` (add "
        f"`--deny REASON` to refuse it; `regiment approvals {run_id} --journal {journal}` "
        f'lists them); then call resume with run_id "{run_id}" to finish the run.'
    )


class _Progress:
    """Finished steps of the current plan against its length. A replan's plan keeps
    the steps it builds on, finished ones included, so those count as done in it."""

    def __init__(self) -> None:
        self._finished: set[str] = set()
        self._current: frozenset[str] = frozenset()
        self.done = 0
        self.total: float | None = None

    def see(self, event: Event) -> str | None:
        match event:
            case PlanCreated(plan=plan):
                self._current = frozenset(step.id for step in plan.steps)
                self.total = len(self._current)
                self.done = len(self._current & self._finished)
                return f"plan v{plan.version}: {counted(len(plan.steps), 'step')}"
            case StepCompleted(step_id=step, worker=worker):
                return self._finish(step, f"step {step} done by {worker}")
            case CheckFailed(step_id=step, check=check):
                return self._finish(step, f"step {step} failed its check '{check}'")
            case StepErrored(step_id=step, worker=worker, status=status):
                return f"step {step} ({worker}) ended {status}"  # not done: it may run again
            case _:
                return None

    def _finish(self, step: str, message: str) -> str:
        if step not in self._finished:
            self._finished.add(step)
            self.done += step in self._current
        return message


async def serve_team(
    team: Team,
    *,
    http_port: int | None = None,
    stderr: TextIO,
    journal: str | None = None,
    team_file: TeamFile | None = None,
    stop: anyio.Event | None = None,
    note: str = "",
    source: str | None = None,
) -> int:
    """Start ``team`` (journaling its runs in ``journal``, if given, with the
    ``team_file`` it was built from, so ``regiment resume RUN_ID`` finds it) and serve
    it over stdio until the client goes away (stdin closes), or over streamable HTTP on
    ``127.0.0.1:http_port`` (0: a free port); on either, until ``stop`` is set or,
    without one, SIGINT or SIGTERM comes (a second one exits at once, 130); the exit code.
    ``note`` goes to ``stderr`` once it serves; a stop while the team starts cancels that.

    A stop cancels the calls in flight (their runs end ``cancelled``, journaled so;
    each call's result says so) and stops the team, its MCP servers and its journal
    before it returns: 0, or 130 after a SIGINT (saying ``regiment: interrupted``).
    (uvicorn re-raised a SIGTERM once it had stopped, the team still up; over stdio,
    the SDK's read of stdin in a thread held a stop until the client wrote.)

    Raises:
        ConfigError: HTTP was asked for on a backend other than asyncio, or stdio
            with stdin or stdout closed; an MCP server that could not be started,
            naming its entry of ``source`` (the team file, as given), if given.
    """
    if http_port is not None and not _on_asyncio():
        raise ConfigError("regiment mcp --http needs --backend asyncio (uvicorn runs on asyncio)")
    if http_port is None and (sys.stdin is None or sys.stdout is None):  # fd 0 or 1 closed
        raise ConfigError(
            "regiment mcp serves over its stdin and stdout, and one of them is closed: let "
            "an MCP client start it (it gives it pipes), or serve over HTTP with --http PORT"
        )
    got: list[int] = []
    failed: Exception | None = None  # raised as it is, not in a task group's exception group
    async with anyio.create_task_group() as tg:
        if stop is None:
            stop = anyio.Event()
            tg.start_soon(watch_signals, stop, partial(_cut_short, stderr), got)
        started: list[bool] = []  # a stop before the team started cancels the start
        with anyio.CancelScope() as starting:
            tg.start_soon(_cut_start, stop, starting, started)
            try:  # it prints no progress: regiment's warnings show, one line each
                with logging_to(stderr, logging.WARNING, ("regiment", "mcp")):
                    async with AsyncExitStack() as stack:
                        running = await _start(stack, team, (journal, team_file), source)
                        started.append(True)
                        await _serve_on(running, journal, http_port, (stderr, note), stop)
            except Exception as exc:
                failed = exc
        tg.cancel_scope.cancel()  # stop watching signals
    if failed is not None:
        raise failed
    if got[:1] == [signal.SIGINT]:
        print("regiment: interrupted", file=stderr, flush=True)
        return EXIT_INTERRUPTED
    return 0


async def _serve_on(
    running: RunningTeam,
    journal: str | None,
    http_port: int | None,
    said: tuple[TextIO, str],
    stop: anyio.Event,
) -> None:
    """Serve the started team over stdio, or HTTP on ``http_port``, until ``stop``; the
    note of ``said`` (stderr, note) goes out once it serves."""
    stderr, note = said
    calls = Calls()
    server = team_server(running, journal=journal, calls=calls)
    if http_port is None:
        from regiment.cli._mcp_stdio import serve_stdio

        if note:
            print(note, file=stderr, flush=True)
        await serve_stdio(server, stop, calls)
    else:
        from regiment.cli._mcp_http import serve_http

        await serve_http(server, http_port, stderr, stop, calls, note)


async def _start(
    stack: AsyncExitStack,
    team: Team,
    journaled: tuple[str | None, TeamFile | None],
    source: str | None,
) -> RunningTeam:
    """``team`` started on ``stack`` (with its journal and team file); an MCP server that
    could not be started is a ``ConfigError`` naming its entry of ``source``, if given."""
    journal, team_file = journaled
    try:
        return await stack.enter_async_context(team.start(journal=journal, team_file=team_file))
    except ToolError as exc:  # nothing ran
        if source is None:
            raise
        raise start_error(exc, team, source) from exc


async def _cut_start(stop: anyio.Event, starting: anyio.CancelScope, started: list[bool]) -> None:
    """Cancel ``starting`` if ``stop`` comes before the team has ``started``: its MCP
    servers or Ray replicas may take their start timeout to fail, and a Ctrl-C waited
    that long. Once started, the stop is the server's (it cancels the calls in flight)."""
    await stop.wait()
    if not started:
        starting.cancel()


def _cut_short(stderr: TextIO) -> None:
    print("regiment: interrupted; exiting without waiting", file=stderr, flush=True)


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
