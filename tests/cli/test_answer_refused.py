"""``regiment run``'s streamed answer when the synthesizer's reply was a refusal: the text
that streamed is said not to be the answer (it was left on the terminal as if it were)."""

from __future__ import annotations

import io

from regiment.cli._answer import AnswerOut
from regiment.hierarchy import TextDelta


def _delta(text: str, *, refused: bool = False) -> TextDelta:
    return TextDelta(run_id="r", role="synthesizer", text=text, refused=refused)


def test_a_refused_answer_is_said_not_to_be_the_answer() -> None:
    stream, out = io.StringIO(), io.StringIO()
    answer = AnswerOut(stream, out)
    answer.delta(_delta("I can't "))
    answer.delta(_delta("help"))
    answer.delta(_delta("", refused=True))
    assert stream.getvalue() == (
        "I can't help\n[the model declined to answer; the text above is not the answer]\n"
    )
    assert answer.written == ""
