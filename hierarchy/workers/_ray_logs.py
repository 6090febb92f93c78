"""A Ray replica's log records, logged again in the caller's process.

In a replica, what the ``regiment`` loggers and the SDKs' (``anthropic``, ``openai``,
``mcp``, ``httpx``) said went to the replica's own log file on its Ray node, where
nobody looked: a failure nobody sees. Each record the replica makes at or above the
level the caller's logger of that family is enabled for (for an SDK's, WARNING at
least: their INFO lines are retries the replica's own spans show) crosses to the
caller as a :class:`LogRecorded`, and the caller logs it again through the same
logger, with the replica's ``process`` id and ``processName`` (``ray::StepHost``) and
the time it was made, so the caller's handlers (``regiment run -v``'s, a service's,
your own) show it as an in-process worker's.

A record made during a step crosses its step's channel and carries the step's
``run_id``, ``step_id`` and ``worker``. A record made outside a step (the replica
building its workers, a tool module's import-time warning, an MCP server restarted
between steps) is kept on the replica (the newest :data:`KEPT`) and crosses at once: while
the team is started, a reader per replica (:func:`follow_logs`, run by one of the
pool's worker actors) holds a call that tells it as soon as one is kept, and takes
it; it also crosses with the replica's next step, and as the team stops the
replicas. It is logged with the worker (or pool) and the replica named.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, final

import anyio

from regiment._log_records import LOGGER_NAME
from regiment._text import counted
from regiment.hierarchy._messages import AssignStep
from regiment.hierarchy.workers._ray_channel import ReplicaChannel
from regiment.hierarchy.workers._ray_replica import when_back
from regiment.hierarchy.workers._wire import LogRecorded, decode_messages

__all__ = (
    "KEPT",
    "LogReader",
    "ReplicaLogHandler",
    "follow_logs",
    "log_again",
    "take_from",
    "take_logs",
    "wanted_levels",
)

_log = logging.getLogger("regiment.ray")
_TAKE_WAIT = 5.0  # seconds a replica has to hand its records over
_UNREAD = (
    "the log records Ray replica %d of '%s' makes between steps reach this process only "
    "with its next step, or as the team stops: reading them as they are made failed (%s: %s)"
)

SDKS = ("anthropic", "openai", "mcp", "httpx")  # their WARNINGs and above cross too
KEPT = 1000  # records made outside a step a replica keeps until the caller takes them
# The channel of the step a task (or a thread it started) works for, and the lowest
# levels its caller logs; anyio's tasks and threads start with a copy of the context.
_STEP: ContextVar[tuple[ReplicaChannel, dict[str, int]] | None] = ContextVar(
    "regiment_ray_step_log", default=None
)
# Where the record was made is kept (the replica's file, line and function); the
# rest of a plain record's attributes are this process's to set.
_WHERE = frozenset(("pathname", "filename", "module", "lineno", "funcName", "threadName"))
_PLAIN = (
    frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
) - _WHERE


def wanted_levels() -> dict[str, int]:
    """By logger family, the lowest level the caller logs: the replica sends no less."""
    levels = {LOGGER_NAME: logging.getLogger(LOGGER_NAME).getEffectiveLevel()}
    for name in SDKS:
        levels[name] = max(logging.WARNING, logging.getLogger(name).getEffectiveLevel())
    return levels


def _family(name: str) -> str:
    return name.partition(".")[0]


@final
class ReplicaLogHandler(logging.Handler):
    """On a replica's ``regiment`` and SDK loggers: sends a step's records to its caller,
    and keeps those made outside a step until the caller takes them."""

    installed: ReplicaLogHandler | None = None

    def __init__(self, levels: dict[str, int]) -> None:
        super().__init__()
        self._levels = dict(levels)  # outside a step: the caller's, as it last said
        self._kept: collections.deque[LogRecorded] = collections.deque(maxlen=KEPT)
        self._lock = threading.Lock()
        self._dropped = 0
        # The caller's reader waiting to hear of kept records (its loop, its event), and
        # whether it was told of those kept now: not again until it has taken them.
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self._told = False

    @classmethod
    def install(cls, levels: dict[str, int]) -> ReplicaLogHandler:
        """The replica's handler (one per process), on its loggers, for ``levels``."""
        if cls.installed is None:
            cls.installed = cls(levels)
            for name in (LOGGER_NAME, *SDKS):
                logging.getLogger(name).addHandler(cls.installed)
        cls.installed.follow(levels)
        return cls.installed

    def follow(self, levels: dict[str, int]) -> None:
        """Send records at ``levels`` from now on (the caller's, as a step says them)."""
        self._levels.update(levels)
        for name, level in levels.items():
            logger = logging.getLogger(name)
            if logger.getEffectiveLevel() > level:  # else the records are never made here
                logger.setLevel(level)

    @classmethod
    def step(cls, channel: ReplicaChannel, levels: dict[str, int]) -> object:
        """Send the records the calling task makes from now on (at ``levels`` or above)
        to ``channel``; the token :meth:`done` takes."""
        cls.install(levels)
        return _STEP.set((channel, levels))

    @staticmethod
    def done(token: object) -> None:
        _STEP.reset(token)  # type: ignore[arg-type]

    def take(self) -> list[LogRecorded]:
        """The records made outside a step since the last take (oldest first)."""
        with self._lock:
            taken, dropped = list(self._kept), self._dropped
            self._kept.clear()
            self._dropped = 0
            self._told = False
        if dropped:
            were = "was" if dropped == 1 else "were"
            said = f"{counted(dropped, 'earlier log record')} of this Ray replica {were} "
            said += f"dropped (kept {KEPT})"
            taken.insert(
                0,
                LogRecorded(
                    name=LOGGER_NAME + ".ray",
                    level=logging.WARNING,
                    message=said,
                    created=taken[0].created if taken else 0.0,
                ),
            )
        return taken

    async def news(self, fresh: bool = False) -> None:
        """Return once records made outside a step are kept that the caller was not told
        of yet (it takes them next, with :meth:`take`); ``fresh``: a new reader, told of
        those kept already. Ray runs the caller's call on the loop of a concurrency group
        of its own, so a record made elsewhere wakes it with a thread-safe call."""
        arrived = asyncio.Event()
        with self._lock:
            if fresh:
                self._told = False
            if (self._kept or self._dropped) and not self._told:
                self._told = True
                return
            self._waiter = (asyncio.get_running_loop(), arrived)
        try:
            await arrived.wait()
        finally:
            with self._lock:
                if self._waiter is not None and self._waiter[1] is arrived:
                    self._waiter = None

    def emit(self, record: logging.LogRecord) -> None:
        step = _STEP.get()
        levels = self._levels if step is None else step[1]
        if record.levelno < levels.get(_family(record.name), logging.WARNING):
            return
        try:
            recorded = _recorded(record, outside=step is None)
            if step is not None:
                step[0].tell_anywhere(recorded)
                return
            with self._lock:
                if len(self._kept) == KEPT:
                    self._dropped += 1
                self._kept.append(recorded)
                waiter = None if self._told else self._waiter
                if waiter is not None:
                    self._waiter, self._told = None, True
            if waiter is not None:
                with contextlib.suppress(RuntimeError):  # its loop has closed: no reader
                    waiter[0].call_soon_threadsafe(waiter[1].set)
        except Exception:
            self.handleError(record)


def _recorded(record: logging.LogRecord, *, outside: bool) -> LogRecorded:
    fields = {
        key: value
        for key, value in record.__dict__.items()
        if key not in _PLAIN and isinstance(value, str | int | float | bool)
    }
    exc_text = record.exc_text
    if record.exc_info and not exc_text:
        exc_text = logging.Formatter().formatException(record.exc_info)
    return LogRecorded(
        name=record.name,
        level=record.levelno,
        message=record.getMessage(),
        created=record.created,
        process=record.process or 0,
        exc_text=exc_text,
        fields=fields,
        outside=outside,
    )


def log_again(
    recorded: LogRecorded, assign: AssignStep | None, worker: str, replica: int = -1
) -> None:
    """Log ``recorded`` in this process: made by a replica during ``assign``'s step, or
    (``outside`` it) by replica number ``replica`` of ``worker`` (a worker, or a pool)."""
    logger = logging.getLogger(recorded.name)
    if not logger.isEnabledFor(recorded.level):
        return
    context: dict[str, object]
    message = recorded.message
    if recorded.outside or assign is None:
        context = {"worker": worker or recorded.fields.get("worker")}
        which = f"replica {replica} of " if replica >= 0 else "a replica of "
        message = f"[Ray {which}'{worker}', pid {recorded.process}] {message}"
    else:
        context = {
            "run_id": assign.run_id,
            "step_id": assign.step.id,
            "worker": worker or recorded.fields.get("worker"),
        }
    record = logging.makeLogRecord(
        {
            **recorded.fields,
            **context,
            "name": recorded.name,
            "levelno": recorded.level,
            "levelname": logging.getLevelName(recorded.level),
            "msg": message,
            "args": None,
            "created": recorded.created,
            "msecs": (recorded.created - int(recorded.created)) * 1000,
            "process": recorded.process,
            "processName": "ray::StepHost",
            "exc_text": recorded.exc_text,
        }
    )
    logger.handle(record)


async def take_logs(handles: Sequence[Any], group: str, label: str) -> None:
    """Take the records the replicas (``handles``, of worker or pool ``label``) made
    outside a step, and log them again here (a replica that does not answer: skipped)."""
    for index, handle in enumerate(handles):
        await take_from(handle, index, group, label)


async def take_from(handle: Any, index: int, group: str, label: str) -> None:
    """Take the records replica number ``index`` made outside a step, and log them again
    here; shielded (taken there, they must not be lost to a cancel) and bounded."""
    with anyio.CancelScope(shield=True):
        try:
            with anyio.fail_after(_TAKE_WAIT):
                data = await handle.logs.options(concurrency_group=group).remote()
        except Exception as exc:  # gone, or restarting (its records are in its Ray log file)
            _log.debug("Ray replica %d of '%s' gave no log records: %r", index, label, exc)
            return
        for recorded in decode_messages(data):
            if isinstance(recorded, LogRecorded):
                log_again(recorded, None, label, index)


class _Gone(Exception):
    """The pool's cluster is gone: its replicas are asked nothing more."""


@final
@dataclass(frozen=True, slots=True)
class LogReader:
    """How :func:`follow_logs` reads a pool's replicas.

    Attributes:
        group: the replicas' control concurrency group.
        label: the worker or pool they serve.
        within: how long Ray may take to restart one (``Ray(start_timeout=...)``).
        seen: told ``(index, False)`` when a replica's reader found it lost (Ray is
            restarting it), ``(index, True)`` once it answers again.
        gone: whether the pool's Ray cluster is known to be gone (nothing to read).
    """

    group: str
    label: str
    within: float
    seen: Callable[[int, bool], None]
    gone: Callable[[], bool]


async def follow_logs(ray: Any, handles: Sequence[Any], reader: LogReader) -> None:
    """Log again here, as soon as a replica keeps them, the records it makes outside a
    step (between steps: an MCP server restarted, a tool's own thread), rather than only
    with its next step or as the team stops; until cancelled (the team stops), for each
    replica of ``handles`` (``ray``: the module)."""
    async with anyio.create_task_group() as tg:
        for index, handle in enumerate(handles):
            tg.start_soon(_follow, ray, handle, index, reader)


async def _follow(ray: Any, handle: Any, index: int, reader: LogReader) -> None:
    group, label = reader.group, reader.label
    while not reader.gone():
        stream = None
        try:
            stream = handle.log_news.options(concurrency_group=group).remote()
            async for item in stream:  # an item each time the replica keeps records
                await item  # (an error item: the replica died)
                if reader.gone():
                    return
                await take_from(handle, index, group, label)
            return  # the replica ended the call (not while the team lives)
        except ray.exceptions.RayActorError as exc:  # lost: Ray restarts it, or it is gone
            reader.seen(index, False)
            _log.debug("Ray replica %d of '%s' was lost (%r)", index, label, exc)
        except Exception as exc:
            if not reader.gone():  # (a cluster gone: said once, as the step that found it)
                _log.warning(_UNREAD, index, label, type(exc).__name__, exc)
            return
        finally:
            # (the team stops: the replica stops waiting too). Never once the cluster is
            # gone: this process has left Ray then, and a Ray call would start a new one.
            if stream is not None and not reader.gone():
                with contextlib.suppress(Exception):
                    ray.cancel(stream)
        if await _back(ray, handle, index, reader):
            reader.seen(index, True)


async def _back(ray: Any, handle: Any, index: int, reader: LogReader) -> bool:
    """Whether the lost replica answers again (Ray restarted it); asked until it does,
    unless it is gone for good or reading it failed (``False``: said, read no more)."""
    ready = handle.ready.options(concurrency_group=reader.group).remote

    async def ask() -> object:
        if reader.gone():  # left Ray (a call would start a new one): asked no more
            raise _Gone
        return await ready()

    while not reader.gone():
        try:
            await when_back(ask, ray.exceptions.ActorUnavailableError, reader.within)
        except TimeoutError:
            continue  # still restarting: asked again
        except ray.exceptions.RayActorError:
            return False  # gone for good (its max_restarts used): nothing more to read
        except _Gone:
            return False
        except Exception as exc:
            if not reader.gone():
                _log.warning(_UNREAD, index, reader.label, type(exc).__name__, exc)
            return False
        return True
    return False
