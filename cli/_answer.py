"""``regiment run``'s answer on stdout: written as the synthesizer streams it."""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import TextIO

from regiment._shown import shown_spec
from regiment.cli._exit import was_closed
from regiment.hierarchy import events as ev

__all__ = ("AnswerOut", "empty_answer_note", "say_unwritten", "void_of_call")


def void_of_call(text: str, told: dict[str, int], call: str, void: int) -> str:
    """``text`` (the synthesizer's calls' text, in the order they streamed) without the
    last ``void`` characters of ``call``'s (``told``: how many each call streamed, in
    the order of their first text; updated). Another call's text that came after it
    stays: two calls streaming at once each drop only their own."""
    after = 0
    for name in reversed(told):
        if name == call:
            break
        after += told[name]
    else:  # none of that call's text is here (it was declined, say): nothing to drop
        return text
    void = min(void, told[call])
    told[call] -= void
    end = max(0, len(text) - after)
    return text[: max(0, end - void)] + text[end:]


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
    # How many characters each synthesizer call streamed (``TextDelta.call``), in order.
    told: dict[str, int] = field(default_factory=dict)

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
            self.told.clear()
            return
        if event.void:  # the stream broke and the call is made again: it comes again
            self._voided(event.call, event.void)
            return
        self.told[event.call] = self.told.get(event.call, 0) + len(event.text)
        text = self.held + event.text
        if not self.written:
            text = text.lstrip()
        body = text.rstrip()
        self.held = text[len(body) :]
        if body:
            self.put(self.stream, body)
            self.written += body

    def _voided(self, call: str, void: int) -> None:
        """Drop the last ``void`` characters ``call`` streamed: held back ones simply go;
        if written ones go, a line says the answer starts again, and what stands of it
        is written again."""
        now = void_of_call(self.written + self.held, self.told, call, void)
        if now.startswith(self.written):
            self.held = now[len(self.written) :]
            return
        assert self.stream is not None
        self.put(
            self.stream,
            "\n[the model's stream broke off and the answer is being written again; "
            "the text above is void]\n",
        )
        body = now.rstrip()
        self.written, self.held = body, now[len(body) :]
        if body:  # the part before it stands: written again, as it is still the answer
            self.put(self.stream, body)

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


def empty_answer_note(answer: str, run_id: str, journal_flag: str | None) -> str | None:
    """The line saying a finished run's answer is empty, or ``None``: the WARNING saying
    why shows only with ``-v``, so the command printed a blank answer, exit 0, and nothing
    said so. ``journal_flag`` is ``None`` without a journal, else what ``regiment show``
    needs (`` --journal J`` or ``""``)."""
    if answer.strip():
        return None
    note = "regiment: the answer is empty (the synthesizer wrote nothing; -v logs why)"
    if journal_flag is None:  # --no-journal: nothing to show the run from
        return f"{note}; the steps' outputs are in its events (--events jsonl)"
    return f"{note}; the steps' outputs: regiment show{journal_flag} {run_id}"
