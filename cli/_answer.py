"""``regiment run``'s answer on stdout: written as the synthesizer streams it."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import TextIO

from regiment.cli._exit import was_closed
from regiment.cli._journal_cmds import shown_spec
from regiment.hierarchy import events as ev

__all__ = ("AnswerOut", "say_unwritten")


@dataclass(slots=True)
class AnswerOut:
    """Writes the answer to ``stream`` as the synthesizer streams it, then the rest of it.

    The run's answer is the synthesizer's text stripped (and the finished
    artefacts after it), so whitespace at either end is held back until more
    text follows it. With ``stream=None`` nothing streams: ``finish`` prints
    the whole answer.

    A write that fails (a full disk; a stdout the command was started without,
    ``>&-``) is kept in ``failed`` and nothing more is written: the run goes on to
    its end, and the command then says the answer is not out. A reader that left
    (``BrokenPipeError``) ends the command as before.
    """

    stream: TextIO | None
    out: TextIO
    written: str = ""
    held: str = ""
    done: bool = False
    failed: OSError | None = None
    what: str = "the answer"  # what stdout carries: "the events" with ``--events jsonl``

    def delta(self, event: ev.TextDelta) -> None:
        if self.stream is None or event.role != "synthesizer":
            return
        if event.refused:  # what streamed was declined: not the answer
            if self.written:
                self.put(
                    self.stream,
                    "\n[the model declined to answer; the text above is not the answer]\n",
                )
            self.written, self.held = "", ""
            return
        if event.void:  # the stream broke and the call is made again: it comes again
            self._voided(event.void)
            return
        text = self.held + event.text
        if not self.written:
            text = text.lstrip()
        body = text.rstrip()
        self.held = text[len(body) :]
        if body:
            self.put(self.stream, body)
            self.written += body

    def _voided(self, void: int) -> None:
        """Drop the last ``void`` characters streamed: held back ones simply go; one
        written already is followed by a line saying the answer starts again."""
        if void <= len(self.held):
            self.held = self.held[: len(self.held) - void]
            return
        void -= len(self.held)
        self.held, kept = "", self.written[: max(0, len(self.written) - void)]
        assert self.stream is not None
        if kept != self.written:
            self.stream.write(
                "\n[the model's stream broke off and the answer is being written again; "
                "the text above is void]\n"
            )
            self.stream.flush()
            self.written = ""
            if kept:  # the part before it stands: written again, as it is still the answer
                self.stream.write(kept)
                self.stream.flush()
                self.written = kept

    def finish(self, answer: str) -> None:
        if self.done:
            return
        self.done = True
        if not self.written:
            self.put(self.out, f"{answer}\n")
        elif answer.startswith(self.written):
            self.put(self.out, f"{answer[len(self.written) :]}\n")
        else:  # the answer is not what streamed (it was replaced): print it whole
            self.put(self.out, f"\n\n{answer}\n")

    def put(self, stream: TextIO, text: str) -> None:
        """Write ``text`` to ``stream`` (stdout), unless a write to it has failed."""
        if self.failed is not None:
            return
        if was_closed(stream):
            self.failed = OSError(errno.EBADF, "stdout is closed")
            return
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            raise  # the reader left: the command ends quietly (141)
        except OSError as exc:
            self.failed = exc


def say_unwritten(out: AnswerOut, run_id: str, journal: str | None, stderr: TextIO) -> None:
    """The command's last line when what ``out`` wrote (the answer, or the events) could
    not be written (``out.failed``): why, and where it is."""
    what, failed = out.what, out.failed
    assert failed is not None
    why = failed.strerror or str(failed)
    if journal is None:
        where = "--no-journal kept it out of the journal, so it is lost: run it again with "
        where += "a stdout that can be written (or with a journal)"
    else:
        where = f"the journal has it: regiment show {run_id} --journal {shown_spec(journal)}"
    print(f"regiment: error: {what} could not be written to stdout ({why}); {where}", file=stderr)
