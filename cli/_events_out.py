"""``regiment run --events jsonl``: one JSON line per event, on stdout or in a file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import msgspec

from regiment.cli._answer import AnswerOut
from regiment.errors import ConfigError
from regiment.hierarchy import events as ev

if TYPE_CHECKING:
    from regiment.hierarchy import JournaledEvents, OpenEnds, RunEvents
    from regiment.journal import Journal

__all__ = ("event_sink", "interrupted_ending", "resumed_events")


async def resumed_events(
    journal: Journal | None, resume: str | None, events_file: str | None
) -> JournaledEvents | None:
    """The journaled events of the run ``resume`` goes on with, which its events file gets
    (see ``event_sink``); ``None`` for a new run, or events not written to a file."""
    if journal is None or resume is None or events_file is None:
        return None
    from regiment.hierarchy import JournaledEvents

    return await JournaledEvents.read(journal, resume)


@contextmanager
def event_sink(
    jsonl: bool, path: str | None, out: AnswerOut, resumed: JournaledEvents | None = None
) -> Iterator[Callable[[ev.Event], None]]:
    """Where ``--events jsonl`` lines go: ``path`` (``--events-file``), else stdout
    (``out.out``); nowhere without ``jsonl``.

    On stdout they go as the answer would: a write that fails (a stdout the command was
    started without, ``>&-``; a full disk) is kept in ``out.failed``, the run goes on to
    its end, and the command then says the events are not out and exits 1.

    ``resumed``: the journaled events of the run ``regiment resume`` goes on with. The file
    then holds the whole run once, in order: it is added to, not overwritten (the first
    part's events, its pause's too, were lost), with the journaled events it does not hold
    yet (all of them, in a new file), then the resumed run's events that are not replays."""
    if not jsonl:
        yield lambda event: None
        return
    encoder = msgspec.json.Encoder()
    if path is None:
        out.what = "the events"
        yield lambda event: out.put(out.out, encoder.encode(event).decode() + "\n")
        return
    if not path.strip():
        raise ConfigError("--events-file is blank; give the file to write the events to")
    try:
        held = 0 if resumed is None else _held(path, resumed.run_id)
        file = open(path, "w" if resumed is None else "a", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise ConfigError(f"--events-file: cannot write {path}: {_why_not(path, exc)}") from exc
    with file:
        write = _jsonl_writer(file, encoder)
        if resumed is None:
            yield write
            return
        for event in resumed.events[held:]:
            write(event)
        yield lambda event: None if resumed.is_replay(event) else write(event)


def _why_not(path: str, exc: OSError) -> str:
    """Why ``path`` cannot be written, and what to give instead."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, IsADirectoryError):
        name = os.path.join(path, "events.jsonl")
        return f"it is a directory; give a file path (in it, {name} say)"
    folder = os.path.dirname(path) or "."
    if isinstance(exc, FileNotFoundError) and not os.path.isdir(folder):
        return f"its directory {folder} is not there; create it, or give a file in one that is"
    if isinstance(exc, PermissionError):
        return f"{reason}; give a file you may write"
    return reason


# The events a journal does not keep (see regiment.hierarchy.events): the rest are its own.
_LIVE = frozenset({"TextDelta", "ToolCallStarted", "ToolCallFinished"})


def _held(path: str, run_id: str) -> int:
    """How many of run ``run_id``'s journaled events the events file ``path`` holds (0:
    no file, an empty one, or no regular file: a pipe). A last line cut short (its process
    died as it wrote) is cut off; a file of something else is a usage error, not lost."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return 0
        with open(path, "rb") as file:
            text = file.read()
    except FileNotFoundError:
        return 0
    if not text.endswith(b"\n"):
        text = text[: text.rfind(b"\n") + 1]
        os.truncate(path, len(text))
    types = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = msgspec.json.decode(line)
        except msgspec.DecodeError:
            event = None
        if not isinstance(event, dict) or (number == 1 and event.get("run_id") != run_id):
            raise ConfigError(
                f"--events-file {path}: line {number} is not an event of run {run_id}, "
                "whose events regiment resume adds to the file: give another file (or a "
                "new one: it gets the whole run), or move this one away"
            )
        types.append(event.get("type"))
    return sum(1 for kind in types if kind not in _LIVE)


def _jsonl_writer(stream: TextIO, encoder: msgspec.json.Encoder) -> Callable[[ev.Event], None]:
    """A writer of one JSON line per event (the ``type`` key is the event's class name)."""

    def write(event: ev.Event) -> None:
        stream.write(encoder.encode(event).decode() + "\n")
        stream.flush()

    return write


def interrupted_ending(
    run_id: str, message: str, events: RunEvents | None, opened: OpenEnds
) -> list[ev.Event]:
    """The last events of a run the command interrupted (``message``: how far it got):
    the ends of the tool calls and steps it cut (``opened``: what the run began; it tells
    a stream that was left no end), then its closing event, as a failed run's, with what
    it got to: its own ending, unread, is there once leaving its stream waited for its
    wind-down."""
    match None if events is None else events.ending:
        case ev.RunCompleted(result=result):  # its stream was left: it ended cancelled
            closing = result.as_failed("RunCancelled", message)
        case ev.RunFailed(error_type="RunCancelled") as failed:  # the cancel reached it first
            closing = msgspec.structs.replace(failed, message=message)
        case ev.RunFailed() as failed:  # it failed for its own reason as it was stopped
            closing = failed
        case _:  # not wound down (yet, or in time): no tally
            closing = ev.RunFailed(run_id=run_id, error_type="RunCancelled", message=message)
    return [*opened.ends(closing), closing]
