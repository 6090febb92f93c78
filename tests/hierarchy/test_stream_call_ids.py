"""Two model calls of one role that stream at once, and a restart on one of them.

A ``TextDelta`` with ``void=N`` says "drop the last N characters this call streamed",
but a reader could only key a call on ``(role, worker, step_id)``: two synthesizer calls
streaming together were one call to it, so it dropped the other call's text (or its own
from the wrong place), and a lagging reader's joins glued the two calls' text together.
Each delta now carries ``call``, the same on every delta of a call (its void marker too)
and another for every other call; readers key on it. Over both providers' wires on the
HTTP stand-in, through the run's channel, on asyncio and trio."""

from __future__ import annotations

import io
import json

import anyio
import pytest

from regiment.cli._answer import AnswerOut
from regiment.cli._progress import RunProgress
from regiment.hierarchy import Event, TextDelta
from regiment.hierarchy._live_events import live_sink
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy.run._channel import _LAG, RunChannel, RunEvents
from regiment.models import Message, ModelRequest, ModelResponse
from regiment.telemetry import Telemetry

from ..models.standin import Reply, StandIn, half_read_body
from ..models.wires import Wire

pytestmark = [pytest.mark.anyio, half_read_body]

TEXTS = {
    "first": "Order 7 was refunded in full, and the customer was told by mail.",
    "second": "The card was charged back 42 euros on the third of May, as agreed.",
}


class ByPrompt:
    """The stand-in's replies, each for the call whose prompt names it (``first`` or
    ``second``), in the order that call asks: concurrent calls get their own."""

    def __init__(self, api: StandIn, replies: dict[str, list[Reply]]) -> None:
        self.api, self.replies = api, replies

    def __bool__(self) -> bool:
        return any(self.replies.values())

    def popleft(self) -> Reply:
        body = json.dumps(self.api.requests[-1].body)
        (name,) = [name for name in self.replies if f"call {name}" in body]
        return self.replies[name].pop(0)


async def _two_calls_at_once(wire: Wire, api: StandIn) -> tuple[list[Event], list[str]]:
    """Both synthesizer calls streamed together into one run's channel, the first one's
    stream broken after some text (and made again): the events its reader gets, and
    each call's reply."""
    api.replies = ByPrompt(  # type: ignore[assignment]
        api,
        {
            "first": [wire.broken(TEXTS["first"], "cut"), wire.reply(TEXTS["first"], ())],
            "second": [wire.reply(TEXTS["second"], ())],
        },
    )
    channel, receive = RunChannel.open(streaming=True)
    events = RunEvents(receive, channel=channel)
    sink = live_sink(channel, "run-1")
    assert sink is not None
    caller = ModelCaller(wire.make(api, True, 2), "synthesizer", Telemetry())
    replies: dict[str, ModelResponse] = {}

    async def ask(name: str) -> None:
        request = ModelRequest(messages=(Message.user(f"call {name}"),), role="synthesizer")
        replies[name] = await caller.call(request, sink)

    async with anyio.create_task_group() as tg:
        for name in TEXTS:
            tg.start_soon(ask, name)
    channel.send.close()
    with receive:
        taken = [event async for event in events]
    return taken, [replies[name].text for name in TEXTS]


def _kept_by_call(events: list[Event]) -> dict[str, str]:
    """Each call's text as a reader keeps it, keyed on ``call``, voids dropped."""
    kept: dict[str, str] = {}
    for event in events:
        if isinstance(event, TextDelta):
            text = kept.get(event.call, "")
            kept[event.call] = text[: len(text) - event.void] + event.text
    return kept


async def test_a_restart_voids_the_text_of_its_own_call_only(wire: Wire, api: StandIn) -> None:
    events, replies = await _two_calls_at_once(wire, api)
    assert replies == list(TEXTS.values())
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert {d.role for d in deltas} == {"synthesizer"}
    calls = list(dict.fromkeys(d.call for d in deltas))
    assert len(calls) == 2
    assert all(calls)  # every delta says its call
    (marker,) = [d for d in deltas if d.void]
    before = [d for d in deltas[: deltas.index(marker)] if d.call == marker.call]
    assert TEXTS["first"].startswith("".join(d.text for d in before))
    assert marker.void == len("".join(d.text for d in before))
    kept = _kept_by_call(events)
    assert kept[marker.call] == TEXTS["first"]
    assert sorted(kept.values()) == sorted(TEXTS.values())
    # the CLI's progress view keeps each call's text once, the void one's broken start gone
    progress = RunProgress()
    for event in events:
        progress.apply(event)
    assert sorted(progress.answer) == sorted("".join(TEXTS.values()))


def _delta(call: str, text: str, void: int = 0) -> TextDelta:
    return TextDelta(run_id="r", role="synthesizer", text=text, void=void, call=call)


def test_the_live_answer_drops_a_void_calls_text_where_it_is_not_the_tail() -> None:
    """Call a's text, then call b's, then a's void marker: a's text goes, b's stays."""
    out = io.StringIO()
    answer, progress = AnswerOut(out, out), RunProgress()
    for event in (
        _delta("a", "Order 7 was "),
        _delta("b", "Charged back."),
        _delta("a", "", void=len("Order 7 was ")),
        _delta("a", " Refunded."),
    ):
        answer.delta(event)
        progress.apply(event)
    assert progress.answer == "Charged back. Refunded."
    head, _, tail = out.getvalue().partition("the text above is void]\n")
    assert head.startswith("Order 7 was Charged back.")
    assert tail == "Charged back. Refunded."
    assert answer.written == "Charged back. Refunded."


async def test_a_lagging_reader_never_gets_two_calls_joined() -> None:
    """Past ``_LAG`` unread events, a call's deltas join its waiting one: only its own."""
    channel, receive = RunChannel.open(streaming=True)
    events = RunEvents(receive, channel=channel)
    with receive, channel.send:
        for index in range(_LAG):
            channel.live(_delta("x", str(index % 10)))
        for piece in ("a1", "b1", "a2", "b2"):
            channel.live(_delta(piece[0], piece))
        channel.send.close()
        taken = [event async for event in events][_LAG:]
    assert taken == [_delta("a", "a1a2"), _delta("b", "b1b2")]
