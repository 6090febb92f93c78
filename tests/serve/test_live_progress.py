"""``GET /runs/{id}/events?live=true``: a live run's progress over SSE (``TextDelta``,
``ToolCallStarted``, ``ToolCallFinished``), unnumbered, between its numbered events.

Before, the service's streams dropped every live event, so an SSE follower never got a
``TextDelta``, nor the ``void=N`` one that says a streamed call broke after some of its
text and is made again (README said the stream carried it). Real uvicorn, httpx, and a
provider stand-in whose stream breaks mid-way (as tests/hierarchy/test_stream_restarts.py)."""

from __future__ import annotations

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.hierarchy import Planner, RunFailed, RunStarted, Team, TextDelta, Worker
from regiment.models import ModelRequest, ScriptedModel
from regiment.serve import MemoryRunStore, RunRecord, create_app
from regiment.serve._live import LAG, LiveTap, follow_live, tell_live

from ..hierarchy.brains import plan_json
from ..models.standin import Reply, StandIn, half_read_body
from ..models.wires import Wire
from .sse import Frame, frames, run_events

pytestmark = [pytest.mark.anyio, half_read_body]

ANSWER = "Order 7 was refunded in full, and the customer was told by mail."
REPORT = "Refunded order 7: 42 euros back to the card."


def _team(wire: Wire, api: StandIn, go: anyio.Event) -> Team:
    """The synthesizer asks the stand-in; the planner waits for ``go`` (the follower is
    on), so the follower sees every delta."""

    async def script(request: ModelRequest) -> str:
        if request.role == "planner":
            await go.wait()
            return plan_json({"description": "refund order 7", "worker": "billing"})
        return REPORT

    scripted = ScriptedModel(script)
    worker = Worker(name="billing", description="Refunds.", model=scripted)
    planner = Planner(model=scripted, synthesizer_model=wire.make(api, True, 2))
    return Team(name="refunds", planner=planner, workers=[worker])


def _kept(got: list[Frame]) -> str:
    """The synthesizer's text a reader keeps, dropping what a ``void`` says to."""
    text = ""
    for frame in got:
        if frame.event == "TextDelta" and frame.data and frame.data["role"] == "synthesizer":
            void = frame.data.get("void", 0)
            assert isinstance(void, int)
            text = text[: len(text) - void] + str(frame.data["text"])
    return text


@pytest.mark.parametrize("how", ["cut", "error_event"])
async def test_a_live_follower_gets_the_deltas_and_the_void_of_a_restarted_call(
    wire: Wire, api: StandIn, how: str
) -> None:
    api.queue(wire.broken(ANSWER, how), wire.reply(ANSWER, ()))
    go = anyio.Event()
    app = create_app(_team(wire, api, go))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as c:
        run_id = (await c.post("/runs", json={"goal": "Refund order 7"})).json()["run_id"]
        got: list[Frame] = []
        async with c.stream("GET", f"/runs/{run_id}/events?live=true") as response:
            assert response.status_code == 200
            async for frame in frames(response):
                if frame.comment is not None:
                    continue
                got.append(frame)
                if frame.event == "RunStarted":
                    go.set()
        numbered = [f for f in got if f.id is not None]
        progress = [f for f in got if f.id is None]
        # the numbered events are the run's, as a follower without ?live gets them
        assert numbered == await run_events(c, run_id)
        assert numbered[-1].event == "RunCompleted"
        assert {f.event for f in progress} == {"TextDelta"}  # no tool calls in this team
        assert all(f.data is not None and f.data["type"] == f.event for f in progress)
        deltas = [f.data for f in progress if f.data and f.data["role"] == "synthesizer"]
        assert {f.data["role"] for f in progress if f.data} == {"planner", "worker", "synthesizer"}
        (marker,) = [d for d in deltas if d.get("void")]
        before = deltas[: deltas.index(marker)]
        assert before, "the broken stream handed some text out first"
        assert marker["text"] == ""
        assert marker["void"] == len("".join(str(d["text"]) for d in before))
        assert _kept(got).strip() == ANSWER
        # the answer's deltas came before the synthesis ended, the end after them
        assert got.index(progress[-1]) < got.index(numbered[-1])
        assert (await c.get(f"/runs/{run_id}")).json()["answer"] == ANSWER
        assert len(api.requests) == 2  # the broken call was made again


async def test_live_progress_is_not_replayed_and_a_bad_live_flag_is_refused(
    wire: Wire, api: StandIn
) -> None:
    api.queue(wire.reply(ANSWER, ()))
    go = anyio.Event()
    go.set()
    app = create_app(_team(wire, api, go))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as c:
        done = await c.post("/runs?wait=true", json={"goal": "Refund order 7"})
        run_id = done.json()["run_id"]
        replayed = await c.get(f"/runs/{run_id}/events?live=true")
        plain = await c.get(f"/runs/{run_id}/events")
        assert replayed.text == plain.text  # an ended run: its numbered events alone
        assert "TextDelta" not in replayed.text
        refused = await c.get(f"/runs/{run_id}/events?live=yes")
        assert refused.status_code == 422
        assert refused.json()["error"] == "invalid ?live"


async def test_a_follower_that_lags_holds_a_calls_text_not_each_piece() -> None:
    record = RunRecord(run_id="r", goal="g", session=None)
    record.events.append(RunStarted(run_id="r", goal="g", team="t"))
    follower = follow_live(record, 0, LiveTap())
    seq, first = await follower.__anext__()  # on: its tap is there
    assert (seq, type(first)) == (1, RunStarted)
    pieces = [f"{i} " for i in range(5 * LAG)]
    for piece in pieces:
        tell_live(record, TextDelta(run_id="r", role="synthesizer", text=piece))
    (tap,) = record.taps
    assert len(tap.items) == LAG  # the rest joined the last one waiting
    record.events.append(RunFailed(run_id="r", error_type="RunCancelled", message="m"))
    record.ended.set()
    rest = [event async for _, event in follower]
    deltas = [e for e in rest if isinstance(e, TextDelta)]
    assert len(deltas) == LAG
    assert "".join(d.text for d in deltas) == "".join(pieces)  # nothing lost
    assert isinstance(rest[-1], RunFailed)
    assert not record.taps  # gone with its follower


async def test_a_live_follower_that_hangs_up_leaves_no_tap_behind(wire: Wire, api: StandIn) -> None:
    api.queue(Reply(200, {}, hold=True))  # the synthesis never answers
    go = anyio.Event()
    store = MemoryRunStore()
    app = create_app(_team(wire, api, go), store=store)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as c:
        run_id = (await c.post("/runs", json={"goal": "Refund order 7"})).json()["run_id"]
        record = store.get(run_id)
        assert record is not None
        async with (
            httpx.AsyncClient(base_url=url, timeout=30) as follower,
            follower.stream("GET", f"/runs/{run_id}/events?live=true") as response,
        ):
            async for frame in frames(response):
                if frame.event == "RunStarted":
                    go.set()
                if frame.event == "TextDelta":
                    assert len(record.taps) == 1
                    break  # the client hangs up here, mid-run (its connection closes)
        with anyio.fail_after(10):
            while record.taps:  # noqa: ASYNC110 (the tap is dropped as the stream ends)
                await anyio.sleep(0.01)
        cancelled = await c.post(f"/runs/{run_id}/cancel")
        assert cancelled.status_code == 202
