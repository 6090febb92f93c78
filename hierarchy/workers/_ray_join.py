"""Joining Ray (or starting a local one) for a team's Ray-placed workers.

``ray.init`` blocks for seconds, so it must not run on the event loop. It must
not run on a pooled worker thread either: a local Ray started by ``ray.init``
ties its head processes (the GCS server and the raylet) to the life of the
*thread* that forked them (Linux's parent-death signal), and anyio ends a pooled
thread once it has idled for a while. The head would then be killed under a
running team, and at exit Ray's own shutdown would find it gone and leave its
agents behind. So ``ray.init`` runs on a thread of its own that lives until the
process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from types import FrameType, ModuleType
from typing import Any

from regiment._signals import at_leave_now
from regiment.errors import ConfigError
from regiment.hierarchy.workers._ray_watch import watch_local_ray

__all__ = ("check_remote_deps", "import_ray", "join_ray", "leave_lost", "require_asyncio")

_INSTALL = "workers on Ray need the ray extra: pip install 'regiment[ray]'"
_log = logging.getLogger("regiment.ray")
_CONNECT_WAIT = 5.0  # seconds a connect to the GCS may take before nothing answers there
_END_WAIT = 5.0  # seconds the local Ray's processes have to end at each signal, at exit
_lock = threading.Lock()  # one join at a time: a second waits, then finds Ray joined


def import_ray() -> ModuleType:
    """``ray``, or a ``ConfigError`` with the install line."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(_INSTALL) from exc
    return ray


async def join_ray(ray: Any, address: str | None) -> None:
    """Join the Ray at ``address`` (``None``: a running local one, else a new local
    one, stopped at exit), unless this process has joined one already.

    Raises:
        ConfigError: the cluster at ``address`` cannot be joined.
    """
    _errors_to_stderr()
    # (Ray's note that its join's thread is not the main one, where it sets a SIGTERM
    # handler: the join sets one itself when it may, and the command has its own.)
    logging.getLogger("ray._private.worker").addFilter(_no_sigterm_note)
    if ray.is_initialized() and not _lock.locked():
        return  # this process joined a Ray already (its own ray.init): use that one
    done: Future[bool] = Future()
    keeper = threading.Thread(
        target=_keep, args=(ray, address, done), name="regiment ray", daemon=True
    )
    keeper.start()
    if await asyncio.wrap_future(done):
        _exit_on_sigterm()


def _no_sigterm_note(record: logging.LogRecord) -> bool:
    return not f"{record.msg}".startswith("SIGTERM handler is not set")


def _exit_on_sigterm() -> None:
    """Make a SIGTERM exit the process (``SystemExit(143)``: the stack unwinds, the team
    stops, the exit hooks run), as ``ray.init`` does on the main thread, unless the
    program handles SIGTERM itself. ``ray.init`` runs on a thread of its own here, where
    it sets no handler: a SIGTERM killed the process outright, and the agents and
    replicas of a Ray it had started lingered for a minute or more.

    The program's own handler (``regiment run``'s, ``regiment serve``'s) is set again:
    Ray's driver puts a crash reporter in front of it, which printed a stack dump
    ("*** SIGTERM received at time=...") to stderr at every SIGTERM, a clean stop."""
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is not signal.SIG_DFL:
        if callable(current) or current is signal.SIG_IGN:
            signal.signal(signal.SIGTERM, current)
        return

    def leave(signum: int, frame: FrameType | None) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, leave)


def _errors_to_stderr() -> None:
    """Ray's driver prints what the cluster tells it (a replica that died, "The autoscaler
    failed ..." as a head goes away) to stdout, whatever ``log_to_driver`` says; a
    program's stdout may be machine-read (``regiment run --events jsonl``, its answer):
    those lines go to stderr. (Ray's own printer, wrapped; left alone if it has moved.)"""
    worker = sys.modules.get("ray._private.worker")
    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "regiment_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printer({**data, "is_err": True}, ignore_prefix)

    to_stderr.regiment_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr  # type: ignore[union-attr]


def _keep(ray: Any, address: str | None, done: Future[bool]) -> None:
    """Join Ray, then stay alive as long as Ray is joined (a local Ray may have been
    started by the join, through ``address="auto"`` too: ``RAY_ADDRESS=local``)."""
    done.set_running_or_notify_cancel()  # a cancelled start no longer cancels the join
    try:
        with _lock:
            joined = _join(ray, address)
    except BaseException as exc:
        done.set_exception(exc)
        return
    if joined:
        atexit.register(_leave, ray)  # before Ray's own exit hook, which does not wait
        at_leave_now(_kill_local_ray)  # a second Ctrl-C: no exit hook runs
        watch_local_ray([p.pid for p in _local_ray_processes()])  # a SIGKILL: no hook runs
    done.set_result(joined)
    # A head started here shares this thread's life: it ends with the process,
    # or once Ray is shut down (the head is gone then anyway).
    while joined and ray.is_initialized():
        time.sleep(1.0)


def _leave(ray: Any) -> None:
    """At exit: shut the Ray this process joined down and wait for the processes it
    started to end. Ray's own exit hook does not wait, so a head it started was killed
    with this thread before it could stop its agents, which lingered for minutes. (It
    also waits for a ``leave_lost`` under way.) A Ctrl-C meanwhile (the command's
    second one, coming once it is exiting) cuts the wait short: the process leaves."""
    try:
        with _lock:
            if ray.is_initialized():
                _shut_down(ray)
    except KeyboardInterrupt:  # its Ray is killed: an exit hook's traceback says nothing
        return


def _shut_down(ray: Any) -> None:
    """``ray.shutdown``, then end what is left of a local Ray this process started.
    Ray stops the head's own processes (the raylet, the GCS server), giving the raylet
    a second before it kills it; under load that is too little for it to stop the
    processes it started (its agents, the replicas' workers), which then lingered for
    a minute or two, till each noticed its raylet was gone. Those are known before
    the shutdown (the head's processes' descendants) and ended after it."""
    started = _local_ray_processes()
    try:
        ray.shutdown(wait_for_processes=True)
        if started:
            _end(started)
    except KeyboardInterrupt:  # no more waiting, but nothing left behind
        _kill(started)
        raise


def _local_ray_processes() -> list[Any]:
    """The processes of the local Ray this process started (none for a Ray it joined):
    the head's, and every one they started."""
    node = getattr(sys.modules.get("ray._private.worker"), "_global_node", None)
    infos = getattr(node, "all_processes", None)
    if not isinstance(infos, dict):
        return []
    try:
        import psutil  # Ray's own (it ships one): loaded with ray

        heads = [psutil.Process(i.process.pid) for kind in infos.values() for i in kind]
        return [p for head in heads for p in (head, *head.children(recursive=True))]
    except Exception as exc:  # an older Ray, or a head gone already: Ray's shutdown only
        _log.debug("cannot list the local Ray's processes (%s: %s)", type(exc).__name__, exc)
        return []


def _kill_local_ray() -> None:
    """SIGKILL the local Ray this process started, waiting for nothing: the process
    leaves at once (a second Ctrl-C), without its exit hooks; the head would die with it,
    but its agents and the replicas' workers ran on for a minute."""
    _kill(_local_ray_processes())


def _kill(processes: list[Any]) -> None:
    """SIGKILL ``processes`` (``psutil.Process`` objects), those gone already included."""
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()


def _end(processes: list[Any]) -> None:
    """SIGTERM the ones still running, SIGKILL those that outlive ``_END_WAIT``, and
    wait (bounded) until they are gone; logged if some are not."""
    import psutil

    for signal_them in ("terminate", "kill"):
        left = [p for p in processes if _running(p)]
        for process in left:
            with contextlib.suppress(psutil.Error):
                getattr(process, signal_them)()
        deadline = time.monotonic() + _END_WAIT
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in left if _running(p)]
        if not left:
            return
    _log.warning(
        "the local Ray this process started left processes running after its shutdown "
        "and a SIGKILL: %s",
        ", ".join(f"{p.pid}" for p in left),
    )


def _running(process: Any) -> bool:
    """Whether ``process`` (a ``psutil.Process``) runs: not gone, nor a zombie (an
    orphan's exit, not reaped yet by the process it was handed to)."""
    import psutil

    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def leave_lost(ray: Any, address: str | None) -> None:
    """Disconnect this process from Ray once its cluster (at ``address``) is known to
    be gone, in a thread of its own (it takes seconds): Ray's client would otherwise
    end the whole process once the GCS has been away for a minute (its
    ``gcs_rpc_server_reconnect_timeout_s``). A later ``Team.start()`` joins Ray again
    (a join meanwhile waits for this to end), and the process's exit waits for it."""
    held = _lock.acquire(blocking=False)  # now: a join from here on waits for the leave
    atexit.register(_leave, ray)

    def leave() -> None:
        if not held:
            _lock.acquire()
        try:
            if ray.is_initialized():
                _shut_down(ray)
        except Exception as exc:  # nothing to do but say so: the process may yet be ended
            _log.error(
                "could not disconnect from the Ray cluster at %s, which went away (%s: %s); "
                "Ray may end this process once it gives up on the cluster",
                address,
                type(exc).__name__,
                exc,
            )
        else:  # (debug: a command's last line is its own, and it may have been written)
            _log.debug(
                "disconnected from the Ray cluster at %s, which went away; a team that "
                "starts Ray-placed workers from now on joins Ray again",
                address,
            )
        finally:
            _lock.release()

    threading.Thread(target=leave, name="regiment ray leave", daemon=True).start()


def _join(ray: Any, address: str | None) -> bool:
    """Join Ray; whether this call did (``False``: another team's join got there first)."""
    if ray.is_initialized():
        return False
    # The replicas' output stays in Ray's log files: the caller's stdout may be
    # machine-read (``regiment run --events jsonl``).
    options = {"include_dashboard": False, "log_to_driver": False}
    named = address if address is not None else os.environ.get("RAY_ADDRESS")
    silent = _silent(named)
    if silent is not None:
        raise ConfigError(silent)
    where = f"{address!r}" if address is not None else f"{named!r} (RAY_ADDRESS)"
    _no_crash_reporter()
    try:
        if address is not None:
            ray.init(address=address, **options)
            return True
        try:
            ray.init(address="auto", **options)  # a running cluster
        except ConnectionError:
            ray.init(**options)  # else a local one, stopped at exit
        return True
    except ConnectionError as exc:
        raise ConfigError(
            f"cannot join the Ray cluster at {where} ({exc}); check the address, and for "
            "a cluster with token authentication set RAY_AUTH_MODE=token and its token "
            "(RAY_AUTH_TOKEN or ~/.ray/auth_token)"
        ) from exc
    except ValueError as exc:  # an address Ray cannot read ("", "host", "http://...")
        why = " ".join(f"{exc}".split())
        raise ConfigError(
            f"cannot join the Ray cluster at {where}: {why}; give the GCS address of the "
            "cluster's head as host:port (the one `ray start --head` prints), or no "
            "address for a local Ray"
        ) from exc


def _no_crash_reporter() -> None:
    """Keep Ray's driver from putting its crash reporter in front of the program's SIGTERM
    handler. ``_exit_on_sigterm`` puts the handler back once the join is done, but a
    SIGTERM while ``ray.init`` connected (the seconds a ``regiment serve`` or ``mcp`` of a
    Ray team takes to start) met the reporter: a stack dump ("*** SIGTERM received ...")
    and the process aborted (-6) on its way out. Ray reads the setting as its driver
    connects (its ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER``); the replicas keep theirs."""
    constants = sys.modules.get("ray._private.ray_constants")
    name = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"
    if constants is not None and hasattr(constants, name):  # (else a Ray that moved it)
        setattr(constants, name, True)


def _silent(address: str | None) -> str | None:
    """Why nothing answers at ``address`` (a ``host:port`` GCS address), if nothing does.
    ``ray.init`` waits minutes for a GCS that is not there (a cluster not started yet,
    or gone): a run, or the resume of a run whose cluster went away, would hang."""
    text = address or ""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or "://" in text:  # "auto", "local", "ray://..."
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_WAIT):
            return None
    except OSError as exc:
        return (
            f"cannot join the Ray cluster at {address!r}: nothing answers there "
            f"({exc.strerror or exc}); start the cluster (`ray start --head --port={port}` on "
            "its head node), or check the address"
        )


def check_remote_deps(deps: object, workers: Sequence[str]) -> None:
    """Raise ``ConfigError`` unless ``deps`` pickles for the Ray replicas of ``workers``."""
    try:
        import_ray().cloudpickle.dumps(deps)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"run(deps=...) cannot be pickled for worker '{workers[0]}' on Ray "
            f"({type(exc).__name__}: {exc}); give deps that pickle (plain data, or objects "
            "that rebuild their connections when unpickled), or keep the worker in-process"
        ) from exc


def require_asyncio(name: str) -> None:
    """Raise ``ConfigError`` unless running under asyncio (Ray's only event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise ConfigError(
            f"worker '{name}' is placed on Ray, and Ray runs only under asyncio: start the "
            "team under asyncio (anyio.run(main) or anyio.run(main, backend='asyncio')), "
            "or remove the worker's placement"
        ) from None
