"""A streamed model call whose stream breaks after some of its text reached the reader.

It was not made again ("already handed out"): a worker's step failed, and a planner-side
call (the synthesis) failed the run, on a blip the SDK would have retried. Now the call
is made again, and the reader is told first that the text it got of that call is void:
a ``TextDelta`` with ``text=""`` and ``void`` = how many characters to drop. The CLI's
live answer drops them, so it never shows the text twice. Over both providers' wires on
the HTTP stand-in (an error event, and a connection cut), on asyncio and trio."""

from __future__ import annotations

import io

import pytest

from regiment.cli._answer import AnswerOut
from regiment.cli._progress import RunProgress
from regiment.hierarchy import Event, Planner, RunCompleted, Team, TextDelta, Worker
from regiment.models import ModelRequest, ScriptedModel

from ..models.standin import StandIn, half_read_body
from ..models.wires import Wire
from .brains import plan_json

pytestmark = [pytest.mark.anyio, half_read_body]

ANSWER = "Order 7 was refunded in full, and the customer was told by mail."
REPORT = "Refunded order 7: 42 euros back to the card."


def _team(wire: Wire, api: StandIn, role: str) -> Team:
    """A team whose ``role`` (worker or synthesizer) asks the stand-in; the rest is scripted."""
    model = wire.make(api, True, 2)

    def script(request: ModelRequest) -> str:
        if request.role == "planner":
            return plan_json({"description": "refund order 7", "worker": "billing"})
        return ANSWER if request.role == "synthesizer" else REPORT

    scripted = ScriptedModel(script)
    worker = Worker(
        name="billing", description="Refunds.", model=model if role == "worker" else scripted
    )
    planner = Planner(
        model=scripted, synthesizer_model=model if role == "synthesizer" else scripted
    )
    return Team(name="refunds", planner=planner, workers=[worker])


def _kept(events: list[Event], role: str) -> str:
    """The text a reader keeps of ``role``'s calls, dropping what a ``void`` says to."""
    text = ""
    for event in events:
        if isinstance(event, TextDelta) and event.role == role:
            text = text[: len(text) - event.void] + event.text
    return text


@pytest.mark.parametrize("how", ["cut", "error_event"])
@pytest.mark.parametrize("role", ["worker", "synthesizer"])
async def test_a_call_whose_stream_broke_after_text_is_made_again_and_its_text_voided(
    wire: Wire, api: StandIn, role: str, how: str
) -> None:
    text = ANSWER if role == "synthesizer" else REPORT
    api.queue(wire.broken(text, how), wire.reply(text, ()))
    team = _team(wire, api, role)
    async with team.start() as running, running.stream("Refund order 7") as stream:
        events = [event async for event in stream]
    end = events[-1]
    assert isinstance(end, RunCompleted), end
    assert end.result.status == "completed"
    assert len(api.requests) == 2  # made again
    deltas = [e for e in events if isinstance(e, TextDelta) and e.role == role]
    (marker,) = [d for d in deltas if d.void]
    before = deltas[: deltas.index(marker)]
    assert before, "the broken stream handed some text out first"
    assert marker.text == ""
    assert not marker.refused
    assert marker.void == len("".join(d.text for d in before))  # all of it is void
    assert text.startswith("".join(d.text for d in before))
    if role == "worker":
        assert (marker.worker, marker.step_id) == ("billing", "s1")
    assert _kept(events, role).strip() == text
    if role == "synthesizer":
        assert end.result.answer == ANSWER
        # the CLI's live answer keeps the text once, not the broken start and then all of it
        progress = RunProgress()
        for event in events[:-1]:
            progress.apply(event)
        assert progress.answer.strip() == ANSWER


async def test_the_plain_cli_answer_says_the_text_before_a_restart_is_void() -> None:
    """``regiment run --plain`` has written the broken start: it says that text is void
    and writes the answer again, and what it writes after the marker is the answer."""
    out = io.StringIO()
    answer = AnswerOut(out, out)

    def delta(text: str, void: int = 0) -> TextDelta:
        return TextDelta(run_id="r", role="synthesizer", text=text, void=void)

    for event in (delta("Order 7 was "), delta("", void=len("Order 7 was ")), delta(ANSWER)):
        answer.delta(event)
    answer.finish(ANSWER)
    written = out.getvalue()
    head, _, tail = written.partition("the text above is void]\n")
    assert head.startswith("Order 7 was")
    assert tail == ANSWER + "\n"
