"""``regiment run``: build the team, run the goal with a view, report, clean up."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO, TypeAlias

import anyio
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

from regiment._text import counted
from regiment.cli._answer import AnswerOut, empty_answer_note, say_unwritten
from regiment.cli._ask import TerminalApprover, asking
from regiment.cli._codes import ended_early
from regiment.cli._events_out import event_sink, interrupted_ending, resumed_events
from regiment.cli._exit import LastWords
from regiment.cli._journal_cmds import journal_exists, open_cli_journal, said
from regiment.cli._progress import RunProgress, TokenMeter
from regiment.cli._resume import resumable
from regiment.cli._start_error import start_error
from regiment.cli._trace_report import RootTraceId, report_trace
from regiment.cli._view import PlainView, ProgressView
from regiment.config import TeamConfig, build_team, trace_replicas
from regiment.errors import ConfigError, ToolError
from regiment.hierarchy import OpenEnds, RunningTeam, RunResult, Team, Worker
from regiment.hierarchy import events as ev
from regiment.journal import Journal, TeamFile
from regiment.models import Model
from regiment.telemetry import SpanCollector, Telemetry, TracingHandle, configure_tracing

if TYPE_CHECKING:
    from regiment.hierarchy import RunEvents

__all__ = ("Outcome", "RunOptions", "TraceMode", "drive")

Outcome: TypeAlias = Literal["done", "failed", "paused", "interrupted", "taken_over", "stopped"]
TraceMode: TypeAlias = Literal["jaeger", "console", "none"]
_TICK = 0.25  # seconds between redraws of the live view's clocks


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What ``regiment run`` was asked to do."""

    team_file: str
    goal: str
    model: str | None
    trace: TraceMode
    events_jsonl: bool
    events_file: str | None
    live: bool
    journal: str | None = None  # where runs are journaled; None: --no-journal
    session: str | None = None
    resume: str | None = None  # the run to resume, for ``regiment resume``
    force: bool = False
    events_deltas: bool = False
    ask: TerminalApprover | None = None  # --approve ask: decides approvals on the terminal
    source: TeamFile | None = None  # journaled with a new run, for `regiment resume RUN_ID`
    journal_flag: str = ""  # what a command the output suggests adds: ` --journal J`
    journal_source: str = "--journal"  # where `journal` came from (`journal_source`)
    note: str = ""  # the model's note (running offline), said as the run starts

    @property
    def prints_answer(self) -> bool:
        """Whether the answer goes to stdout (not when the events do)."""
        return not (self.events_jsonl and self.events_file is None)


@dataclass(kw_only=True)
class _Tracing:
    """The command's own tracer provider: a token meter always, plus the chosen output."""

    provider: SdkTracerProvider
    meter: TokenMeter = field(default_factory=TokenMeter)
    collector: SpanCollector | None = None
    handle: TracingHandle | None = None
    root: RootTraceId = field(default_factory=RootTraceId)

    @classmethod
    def open(cls, mode: TraceMode) -> _Tracing:
        handle = configure_tracing(set_global=False) if mode == "jaeger" else None
        provider = handle.provider if handle is not None else None
        sdk = provider if isinstance(provider, SdkTracerProvider) else SdkTracerProvider()
        tracing = cls(provider=sdk, handle=handle)
        sdk.add_span_processor(tracing.meter)
        sdk.add_span_processor(tracing.root)
        if mode == "console":
            tracing.collector = SpanCollector()
            sdk.add_span_processor(tracing.collector)
        return tracing

    @property
    def meter_provider(self) -> MeterProvider | None:
        """Where metrics go: with ``--trace jaeger``, the same collector as the spans."""
        return None if self.handle is None else self.handle.meter_provider

    def shutdown(self) -> None:
        # Flushes the OTLP exporter, so every span has left when the command exits;
        # with no collector listening, after about one export timeout.
        if self.handle is not None:
            self.handle.shutdown()
        else:
            self.provider.shutdown()


@dataclass(slots=True)
class _Ending:
    answer: AnswerOut
    result: RunResult | None = None
    failure: ev.RunFailed | None = None
    interrupted: bool = False
    events_ended: bool = False  # an interrupted run's closing event is written
    events: RunEvents | None = None  # the run's events; its ending once they have closed
    # What a stop cancels: the command, then only the events' reading (see _consume).
    cut: anyio.CancelScope | None = None
    # The tool calls and steps the events started and have not ended (see _end_events).
    open: OpenEnds = field(default_factory=OpenEnds)


async def drive(
    config: TeamConfig,
    options: RunOptions,
    *,
    stdout: TextIO,
    stderr: TextIO,
    stop: anyio.Event,
    last_words: LastWords | None = None,
) -> Outcome:
    """Run ``options.goal`` on the team ``config`` describes; print what happened.

    ``last_words`` learns how far the run got, for a forced exit to say (and to end
    the events with).

    Raises:
        ConfigError: the team cannot be built, or the events file cannot be opened.
    """
    words = last_words or LastWords()
    tracing = _Tracing.open(options.trace)
    if tracing.handle is not None and tracing.handle.endpoint is not None:
        config = trace_replicas(config, tracing.handle.endpoint)  # their spans go there too
    journal: Journal | None = None
    try:
        team = build_team(
            config,
            model=options.model,
            telemetry=Telemetry(tracing.provider, meter_provider=tracing.meter_provider),
            source=options.team_file,
        )
        team = team if options.ask is None else asking(team, options.ask)
        try:
            journal = await _open_journal(options)  # after the build: no stray .regiment/
            ending = _Ending(AnswerOut(None, stdout))  # streamed only with a plain view
            resumed = await resumed_events(journal, options.resume, options.events_file)
            with event_sink(
                options.events_jsonl, options.events_file, ending.answer, resumed
            ) as sink:
                if options.note:  # the run starts: every usage error would have come first
                    print(options.note, file=stderr, flush=True)
                progress = RunProgress()
                view = _view(options, progress, stderr, tracing.meter)
                if options.prints_answer and isinstance(view, PlainView):
                    ending.answer.stream = stdout
                with words.told(progress.summary, lambda: _end_events(ending, progress, sink)):
                    await _watch(team, options, journal, progress, view, sink, stop, ending)
        finally:
            await _close_models(team)
    finally:
        tracing.shutdown()
        if journal is not None:
            with anyio.CancelScope(shield=True):
                await journal.close()
    outcome = _report(ending, progress, options, tracing, stdout, stderr)
    words.summary = None  # the run's own last line is out
    return outcome


async def _open_journal(options: RunOptions) -> Journal | None:
    """The run's journal; for a resume, one that has the run (else a usage error)."""
    if options.journal is None:
        if options.resume is not None:
            raise ConfigError("regiment resume continues a journaled run: drop --no-journal")
        return None
    if options.resume is not None and not journal_exists(options.journal):
        raise ConfigError(f"no journal at {options.journal}, so no run {said(options.resume)}")
    journal = await open_cli_journal(options.journal, source=options.journal_source)
    if options.resume is not None:
        try:
            await resumable(journal, options.resume, options.journal, options.journal_flag)
        except ConfigError:
            await journal.close()
            raise
    return journal


async def _watch(
    team: Team,
    options: RunOptions,
    journal: Journal | None,
    progress: RunProgress,
    view: ProgressView,
    sink: Callable[[ev.Event], None],
    stop: anyio.Event,
    ending: _Ending,
) -> None:
    error: Exception | None = None
    with view:
        async with anyio.create_task_group() as tg:

            async def cancel_on_stop() -> None:
                await stop.wait()
                ending.interrupted = True
                progress.interrupt()  # the live table's last frame says so
                (ending.cut or tg.cancel_scope).cancel()

            ending.cut = tg.cancel_scope
            tg.start_soon(cancel_on_stop)
            if not isinstance(view, PlainView):
                tg.start_soon(_tick, view)
            try:
                await _consume(team, options, journal, progress, view, sink, ending)
            except Exception as exc:  # re-raised below, so the task group does not wrap it
                error = exc
            finally:
                tg.cancel_scope.cancel()  # the helpers; after the run has wound down
    if error is not None:
        raise error
    if ending.interrupted:
        _end_events(ending, progress, sink)


def _end_events(ending: _Ending, progress: RunProgress, sink: Callable[[ev.Event], None]) -> None:
    """End an interrupted run's events (once, if they have no end), so an events file
    always has an ending, a forced exit's too. (The run itself never gets to emit one:
    the stream it writes to is what was cancelled.)"""
    if ending.result is None and ending.failure is None and not ending.events_ended:
        ending.events_ended = True
        message = f"interrupted; cancelled the run {progress.summary()}"
        for event in interrupted_ending(progress.run_id, message, ending.events, ending.open):
            sink(event)


def _view(
    options: RunOptions, progress: RunProgress, stderr: TextIO, meter: TokenMeter
) -> ProgressView:
    """The live table when asked for and rich is installed (the ``cli`` extra), else lines."""
    if options.live:
        try:
            from rich.console import Console

            from regiment.cli._live import LiveView
        except ImportError:
            pass
        else:
            return LiveView(progress, Console(file=stderr), meter)
    return PlainView(progress, stderr)


async def _consume(
    team: Team,
    options: RunOptions,
    journal: Journal | None,
    progress: RunProgress,
    view: ProgressView,
    sink: Callable[[ev.Event], None],
    ending: _Ending,
) -> None:
    async with AsyncExitStack() as stack:
        try:
            running = await stack.enter_async_context(
                team.start(journal=journal, team_file=options.source)
            )
        except ToolError as exc:  # an MCP server could not be started: nothing ran
            raise start_error(exc, team, options.team_file) from exc
        events = ending.events = await stack.enter_async_context(_stream(running, options))
        # From here a stop cancels the reading alone: leaving the stream cancels the run,
        # which winds down (its steps cut, each report it gets journaled), then the team
        # stops. Cancelled with the rest, the team's actors were stopped under the run, so
        # a report its planner had yet to take (a step just done) was lost to the journal.
        with anyio.CancelScope() as ending.cut:
            if ending.interrupted:
                ending.cut.cancel()  # the stop came as the stream opened
            await _read(events, options, progress, view, sink, ending)


async def _read(
    events: RunEvents,
    options: RunOptions,
    progress: RunProgress,
    view: ProgressView,
    sink: Callable[[ev.Event], None],
    ending: _Ending,
) -> None:
    """Show, write and keep the run's events as they come."""
    async for event in events:
        progress.apply(event)
        # A streamed answer's line ends before the last progress line is shown.
        streamed = ending.answer.stream is not None and options.prints_answer
        if streamed and isinstance(event, ev.RunCompleted) and event.result.status != "paused":
            ending.answer.finish(event.result.answer)
        view.show(event)
        ending.open.see(event)
        if isinstance(event, ev.TextDelta):
            ending.answer.delta(event)
            if not options.events_deltas:
                continue  # they are many: in the events file only when asked for
        sink(event)
        if isinstance(event, ev.RunCompleted):
            ending.result = event.result
        elif isinstance(event, ev.RunFailed):
            ending.failure = event


def _stream(running: RunningTeam, options: RunOptions) -> AbstractAsyncContextManager[RunEvents]:
    if options.resume is not None:
        return running.resume_stream(options.resume, force=options.force)
    return running.stream(options.goal, session=options.session)


async def _tick(view: ProgressView) -> None:
    while True:
        await anyio.sleep(_TICK)
        view.tick()


def _report(
    ending: _Ending,
    progress: RunProgress,
    options: RunOptions,
    tracing: _Tracing,
    stdout: TextIO,
    stderr: TextIO,
) -> Outcome:
    outcome: Outcome = "failed"
    result = ending.result
    if result is not None:
        paused = result.status == "paused"  # no answer yet: one line says what to do
        if options.prints_answer and not paused:
            ending.answer.finish(result.answer)
        if result.status == "partial":
            note = f"regiment: partial result: the {result.budget_exhausted} budget ran out"
            print(note, file=stderr)
        flag = None if options.journal is None else options.journal_flag
        if not paused and (empty := empty_answer_note(result.answer, result.run_id, flag)):
            print(empty, file=stderr)
        outcome = "paused" if paused else "done"
        if paused:
            n, flag = counted(len(result.pending_approvals), "approval"), options.journal_flag
            line = f"paused: {n} pending — regiment approvals{flag} {result.run_id}"
            if options.journal is None:  # no journal to list, decide and resume them from
                line = f"paused: {n} pending, but --no-journal kept the run out of "
                line += "the journal, so it cannot go on: run it with a journal (or --approve ask)"
            print(line, file=stderr)
    elif ending.interrupted:
        print(f"regiment: interrupted; cancelled the run {progress.summary()}", file=stderr)
        outcome = "interrupted"
    else:
        journaled = options.journal is not None
        outcome = ended_early(ending.failure, journaled, stderr, options.journal_flag)
    _report_trace(result, tracing, stderr)
    if result is not None and ending.answer.failed is not None:  # the last line: not a success
        say_unwritten(ending.answer, result.run_id, options.journal, stderr)
        outcome = "failed"
    return outcome


def _report_trace(result: RunResult | None, tracing: _Tracing, stderr: TextIO) -> None:
    trace_id = result.trace_id if result is not None and result.trace_id else tracing.root.trace_id
    report_trace(trace_id, collector=tracing.collector, handle=tracing.handle, stderr=stderr)


async def _close_models(team: Team) -> None:
    """Close the API clients the team's models hold, and those of the teams nested in it."""
    sdk = sys.modules.get("regiment.models._sdk_model")
    if sdk is None:
        return  # no SDK-backed model was built, so none to close (and no SDK to import)
    closed: set[int] = set()
    for model in _models_of(team):
        if isinstance(model, sdk.SDKModel) and id(model) not in closed:
            closed.add(id(model))
            await model.aclose()


def _models_of(team: Team) -> list[Model | None]:
    planner = team.planner
    found: list[Model | None] = [planner.model, planner.synthesizer_model]
    for worker in team.workers:
        found += [worker.model] if isinstance(worker, Worker) else _models_of(worker.team)
    found += [team.critic.model if team.critic else None]
    found += [team.compression.model if team.compression else None]
    return found
