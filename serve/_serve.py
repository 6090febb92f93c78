"""``regiment serve``: the app under uvicorn, with a log handler."""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Protocol, TextIO

import anyio

from regiment._logging import SDK_LOGGERS, ContextFormatter, level_for, logging_to
from regiment._signals import EXIT_INTERRUPTED, watch_signals
from regiment._text import counted
from regiment.errors import ConfigError
from regiment.hierarchy import Team
from regiment.journal import Journal, open_journal

from ._app import create_app
from ._checks import check_lease_ttl, check_token_text
from ._registry import KEEP_ENDED, MemoryRunStore, RunStore

if TYPE_CHECKING:
    import uvicorn

__all__ = ("ContextFormatter", "ServeOptions", "check_bind", "serve_command")

log = logging.getLogger("regiment.serve")

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def check_bind(host: str, token: str | None) -> None:
    """Refuse a host other than loopback without a token."""
    if token is None and host not in LOCAL_HOSTS:
        raise ConfigError(
            f"refusing to serve on {host} without a token: anyone who can reach it could "
            "run the team; pass --token (or set REGIMENT_TOKEN), or bind --host 127.0.0.1"
        )


class ServeOptions(Protocol):
    """What ``regiment serve`` parsed (an ``argparse.Namespace``)."""

    host: str
    port: int
    token: str | None
    journal: str | None
    keep_runs: int | None
    lease_ttl: float | None
    verbose: int


async def serve_command(
    team: Team,
    options: ServeOptions,
    *,
    environ: Mapping[str, str],
    stderr: TextIO,
    stop: anyio.Event | None = None,
    note: str = "",
) -> int:
    """Serve ``team`` until ``stop`` is set, or, without one, until SIGINT or SIGTERM
    (caught in the main thread, as ``regiment serve`` does); returns the exit code.
    ``note`` (``regiment serve``'s "running offline" line) goes to ``stderr`` once the
    server listens: after any refusal below, which is then the command's only line.

    Stopping cancels the live runs (journaled so), stops the team and closes the
    journal before it returns: 0, or 130 after a SIGINT (saying ``regiment:
    interrupted``). A second signal exits the process at once, 130. (Left to uvicorn,
    a SIGTERM killed the process once the server had stopped, before the journal was
    closed or anything after this call ran, and a SIGINT raised ``KeyboardInterrupt``.)

    Called in another thread than the main one (where Python delivers signals), it
    needs ``stop``: without one nothing could stop it, so it refuses to serve.

    Raises:
        ConfigError: a public host without a token; ``--keep-runs`` below 1;
            ``--lease-ttl`` without ``--journal``; no ``stop`` outside the main
            thread; the server could not start (a host that is not this machine's, a
            port in use: ``refusal`` says which).
        JournalError: the journal cannot be opened (before anything is served).
        ToolError: the team could not start (an MCP server that will not run).
    """
    if stop is not None:
        return await _serve(team, options, environ, stderr, stop, note)
    if threading.current_thread() is not threading.main_thread():
        raise ConfigError(
            "serve_command() runs in thread "
            f"{threading.current_thread().name!r}, not the main thread, so it cannot watch "
            "SIGINT and SIGTERM (Python delivers signals to the main thread only) and "
            "nothing could stop it: pass stop=anyio.Event() and set it to stop serving"
        )
    stop, got = anyio.Event(), list[int]()
    refused: Exception | None = None  # raised as it is, not in a task group's exception group
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals, stop, partial(_cut_short, stderr), got)
        try:
            code = await _serve(team, options, environ, stderr, stop, note)
        except Exception as exc:  # ConfigError, JournalError: the caller explains them
            refused = exc
        tg.cancel_scope.cancel()  # stop watching signals
    if refused is not None:
        raise refused
    if code == 0 and got[:1] == [signal.SIGINT]:
        print("regiment: interrupted", file=stderr, flush=True)
        return EXIT_INTERRUPTED
    return code


def _cut_short(stderr: TextIO) -> None:
    print("regiment: interrupted; exiting without waiting", file=stderr, flush=True)


async def _serve(
    team: Team,
    options: ServeOptions,
    environ: Mapping[str, str],
    stderr: TextIO,
    stop: anyio.Event,
    note: str,
) -> int:
    """Serve until ``stop`` is set; 0 (see ``serve_command``)."""
    token, store = _checked(options, environ)
    check_lease_ttl(team, options.lease_ttl, options.journal)
    # Opened here, not in the app's lifespan: a journal that cannot open is one
    # line and exit 2, as for `regiment run`, not a lifespan traceback.
    journal = None if options.journal is None else await open_journal(options.journal)
    # INFO by default (a service's log), DEBUG with -vv; uvicorn's own records too.
    level = level_for(options.verbose, default=logging.INFO)
    try:
        with logging_to(stderr, level, ("regiment", "uvicorn", *SDK_LOGGERS)):
            said = partial(_say, note, stderr)
            refused = await _serve_started(team, options, journal, (token, store), stop, said)
    finally:
        if journal is not None:
            with anyio.CancelScope(shield=True):
                await journal.close()
    if refused is not None:
        why = refusal(options.host, options.port)  # nothing is served: it may block
        raise ConfigError(
            why
            or (
                f"could not serve on {options.host}:{options.port} (uvicorn exited {refused}; "
                "its log above says why): check --host and --port"
            )
        )
    return 0


async def _serve_started(
    team: Team,
    options: ServeOptions,
    journal: Journal | None,
    access: tuple[str | None, RunStore],
    stop: anyio.Event,
    listening: Callable[[], None],
) -> str | int | None:
    """Start ``team``, then serve it until ``stop`` is set; uvicorn's exit code if it
    could not serve. The team starts here, not in the app's lifespan: a team that cannot
    start (an MCP server that will not run) raises its own error, not a lifespan
    traceback and uvicorn's exit, and a stop while it starts (its MCP servers, its Ray
    replicas) cancels the start at once, where uvicorn waited for its startup to end."""
    import uvicorn  # the serve extra, checked on importing regiment.serve

    serving: list[uvicorn.Server] = []
    refused: str | int | None = None
    failed: Exception | None = None  # raised as it is, not in the task group's exception group
    async with anyio.create_task_group() as tg:

        async def stop_when_set() -> None:
            await stop.wait()
            if serving:
                serving[0].should_exit = True
            else:  # still starting: nothing is served yet
                tg.cancel_scope.cancel()

        tg.start_soon(stop_when_set)
        start = (
            team.start(journal=journal)
            if options.lease_ttl is None
            else team.start(journal=journal, lease_ttl=options.lease_ttl)
        )
        try:
            async with start as running:
                app = create_app(running, journal=journal, token=access[0], store=access[1])
                config = uvicorn.Config(
                    app, host=options.host, port=options.port, log_config=None, lifespan="on"
                )
                serving.append(_stopping_server(config, app.state.regiment_stop_runs, listening))
                with frozen_heap():
                    try:
                        await serving[0].serve()
                    except SystemExit as exc:  # uvicorn's way to say it could not start
                        refused = exc.code
        except Exception as exc:  # the team could not start: the caller explains it
            failed = exc
        tg.cancel_scope.cancel()
    if failed is not None:
        raise failed
    return refused


def refusal(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on, in words that say what to do: a host that
    does not resolve or is not an address of this machine is the host's fault, an address
    in use the port's. ``None`` when it can be listened on now (nothing to say but the log)."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        return _bad_host(host, getattr(exc, "strerror", None) or str(exc))
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            try:
                sock.bind(address)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                if exc.errno == errno.EADDRINUSE:
                    return (
                        f"could not serve on {host}:{port} ({reason}): pick another --port "
                        "(0 takes a free one), or stop what holds it"
                    )
                return _bad_host(host, reason)
    return None


def _bad_host(host: str, reason: str) -> str:
    return (
        f"cannot listen on host {host!r}: {reason}; give an address of this machine, "
        "e.g. 127.0.0.1 or 0.0.0.0"
    )


def _checked(options: ServeOptions, environ: Mapping[str, str]) -> tuple[str | None, RunStore]:
    """The token and the run store the options give, once they check out (``ConfigError``)."""
    check_token_text(options.token, "--token")  # (given, but blank: refused too)
    token = options.token or environ.get("REGIMENT_TOKEN") or None  # an empty variable: unset
    if options.token is None:
        check_token_text(token, "$REGIMENT_TOKEN")
    check_bind(options.host, token)
    if options.lease_ttl is not None and options.journal is None:
        raise ConfigError(
            "--lease-ttl is how long a journaled run stays this service's; it needs "
            "--journal (an SQLite file or a postgresql:// URL)"
        )
    keep = KEEP_ENDED if options.keep_runs is None else options.keep_runs
    if isinstance(keep, int) and keep < 1:  # the store's own words name its argument, keep=
        raise ConfigError(
            f"--keep-runs {keep}: keep at least the last ended run (a whole number >= 1)"
        )
    return token, MemoryRunStore(keep=keep)


def _say(note: str, stderr: TextIO) -> None:
    if note:
        print(note, file=stderr, flush=True)


def _stopping_server(
    config: uvicorn.Config, stop_runs: Callable[[], int], listening: Callable[[], None]
) -> uvicorn.Server:
    """uvicorn's server, which cancels the live runs as it starts to stop: it waits for
    open requests before it runs the app's shutdown, so a ``?wait=true`` request on a
    run that went on for minutes held the stop (SIGTERM, Ctrl-C) that long.

    It leaves SIGINT and SIGTERM alone: ``serve_command`` watches both. uvicorn's
    handling re-raises a SIGTERM once it has stopped, which killed the process before
    the journal was closed. ``listening()`` is called once it listens (a port it cannot
    bind ends its start with ``SystemExit`` before).
    """
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # not when the app's own startup failed
                listening()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            stopped = stop_runs()
            if stopped:
                log.info("stopping: %s cancelled", counted(stopped, "live run"))
            await super().shutdown(sockets)

    return Server(config)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the start-up heap (the modules, the team file's team, the app) out of the
    garbage collector's full collections while serving, unless someone froze it already.

    A full collection walks every tracked object and holds the event loop while
    it does: with the imports' ~45k objects and a burst of 1,000 runs, 21-47 ms
    a collection in bench row 5, 3-5 ms with that heap frozen (``gc.freeze()``).
    It is collected once first, so no garbage is frozen for good; on the way out
    the heap is thawed, for a caller that serves in its own process and goes on.
    """
    if gc.get_freeze_count():  # the embedding application manages it
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
