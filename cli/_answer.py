"""``regiment run``'s answer on stdout: written as the synthesizer streams it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from regiment.hierarchy import events as ev

__all__ = ("AnswerOut",)


@dataclass(slots=True)
class AnswerOut:
    """Writes the answer to ``stream`` as the synthesizer streams it, then the rest of it.

    The run's answer is the synthesizer's text stripped (and the finished
    artefacts after it), so whitespace at either end is held back until more
    text follows it. With ``stream=None`` nothing streams: ``finish`` prints
    the whole answer.
    """

    stream: TextIO | None
    out: TextIO
    written: str = ""
    held: str = ""
    done: bool = False

    def delta(self, event: ev.TextDelta) -> None:
        if self.stream is None or event.role != "synthesizer":
            return
        if event.refused:  # what streamed was declined: not the answer
            if self.written:
                self.stream.write(
                    "\n[the model declined to answer; the text above is not the answer]\n"
                )
                self.stream.flush()
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
            self.stream.write(body)
            self.stream.flush()
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
            print(answer, file=self.out, flush=True)
        elif answer.startswith(self.written):
            print(answer[len(self.written) :], file=self.out, flush=True)
        else:  # the answer is not what streamed (it was replaced): print it whole
            print(f"\n\n{answer}", file=self.out, flush=True)
