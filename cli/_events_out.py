"""``regiment run --events jsonl``: one JSON line per event, on stdout or in a file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import msgspec

from regiment.cli._answer import AnswerOut
from regiment.errors import ConfigError
from regiment.hierarchy import events as ev

if TYPE_CHECKING:
    from regiment.hierarchy import OpenEnds, RunEvents

__all__ = ("event_sink", "interrupted_ending")


@contextmanager
def event_sink(
    jsonl: bool, path: str | None, out: AnswerOut
) -> Iterator[Callable[[ev.Event], None]]:
    """Where ``--events jsonl`` lines go: ``path`` (``--events-file``), else stdout
    (``out.out``); nowhere without ``jsonl``.

    On stdout they go as the answer would: a write that fails (a stdout the command was
    started without, ``>&-``; a full disk) is kept in ``out.failed``, the run goes on to
    its end, and the command then says the events are not out and exits 1."""
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
        file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise ConfigError(f"--events-file: cannot write {path}: {exc}") from exc
    with file:
        yield _jsonl_writer(file, encoder)


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
