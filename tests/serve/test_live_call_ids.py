"""``GET /runs/{id}/events?live=true``: a follower that lags gets a call's pieces joined
into its waiting delta, and only that call's (``TextDelta.call``). Two calls of one role
streaming at once were joined into one delta (their text interleaved), keyed on
``(role, worker, step_id)`` alone."""

from __future__ import annotations

import pytest

from regiment.hierarchy import RunFailed, RunStarted, TextDelta
from regiment.serve import RunRecord
from regiment.serve._live import LAG, LiveTap, follow_live, tell_live

pytestmark = pytest.mark.anyio


def _delta(call: str, text: str) -> TextDelta:
    return TextDelta(run_id="r", role="synthesizer", text=text, call=call)


async def test_a_lagging_follower_never_gets_two_calls_joined() -> None:
    record = RunRecord(run_id="r", goal="g", session=None)
    record.events.append(RunStarted(run_id="r", goal="g", team="t"))
    follower = follow_live(record, 0, LiveTap())
    await follower.__anext__()  # on: its tap is there
    for index in range(LAG):
        tell_live(record, _delta("x", str(index % 10)))
    for piece in ("a1", "b1", "a2", "b2"):
        tell_live(record, _delta(piece[0], piece))
    record.events.append(RunFailed(run_id="r", error_type="RunCancelled", message="m"))
    record.ended.set()
    rest = [event async for _, event in follower]
    deltas = [e for e in rest if isinstance(e, TextDelta)][LAG:]
    # each call's text stays its own: a piece joins its call's waiting delta only
    assert [(d.call, d.text) for d in deltas] == [
        ("a", "a1"),
        ("b", "b1"),
        ("a", "a2"),
        ("b", "b2"),
    ]
