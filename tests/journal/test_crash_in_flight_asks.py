"""A guard's judge call, and a synthesis' second ask, in flight when a run's process is
killed are billed, and a resume counts them, as any model call in flight is.

Only the first ask of each planner-side call and each worker call journaled its intent
(``ModelCallStarted``) before it was sent: a judge's call (an answer guard's) and the
synthesis asked again for an empty answer were sent without one, so a run SIGKILLed
while either was in flight resumed with that call uncounted, though its provider billed
it. Each now journals its intent first, keyed as its reply is (a judge's ``run/guard/...``,
a later ask ``synthesis/N#2``, answered by the synthesis' reply), and a resume charges
it at its most, to the role whose call was judged or asked again.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from regiment.hierarchy._replay import Replay
from regiment.journal import ModelCallFinished, ModelCallStarted
from regiment.models import ModelResponse, TextPart, Usage

from .in_flight_team import SLOW_CALL, bill_of
from .killed_child import journal_at
from .test_crash_in_flight import USD, _killed_in_flight, _resumed

pytestmark = pytest.mark.anyio

# The calls the child's model was sent, in order, the last one left in flight.
BILLED = {
    "reask": ["planner", *["worker"] * SLOW_CALL, "synthesizer", "synthesizer"],
    "judge": ["planner", *["worker"] * SLOW_CALL, "synthesizer", "judge"],
}


def _lost_key(slow: str, starts: list[ModelCallStarted]) -> str:
    """The key of the call left in flight: the second ask, or the judge's."""
    if slow == "reask":
        return "synthesis/1#2"
    (key,) = {s.call_key for s in starts if s.call_key.startswith("run/guard/")}
    return key


@pytest.mark.parametrize(
    ("anyio_backend", "kind", "slow"),
    [
        ("asyncio", "sqlite", "reask"),
        ("trio", "sqlite", "judge"),
        ("trio", "postgres", "reask"),
        ("asyncio", "postgres", "judge"),
    ],
)
async def test_a_judge_or_a_second_ask_in_flight_at_a_crash_is_counted(
    anyio_backend: str,
    kind: str,
    slow: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    where, bill = journal_at(kind, tmp_path, request), tmp_path / "bill.txt"
    run_id = await _killed_in_flight(where, bill, slow, anyio_backend, tmp_path / "child.log")
    lines = bill.read_text().splitlines()
    assert [line.split()[0] for line in lines] == BILLED[slow]
    lost = int(lines[-1].split()[1])  # what the call in flight was billed
    before = bill_of(bill)
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        resumed, records = await _resumed(where, run_id, bill, slow)
    billed = bill_of(bill)
    assert billed > before  # the resumed run made calls of its own
    assert (resumed.status, resumed.budget_exhausted) == ("completed", None)
    # What the providers billed never passes the budget, and the run counts all of it.
    assert billed <= USD * 1e6, (billed, resumed.usage.micro_usd)
    assert resumed.usage.micro_usd >= billed, (billed, resumed.usage.micro_usd)
    starts = [r for r in records if isinstance(r, ModelCallStarted)]
    key = _lost_key(slow, starts)
    (start, *_) = [s for s in starts if s.call_key == key]
    assert start.role == "synthesizer"  # the role whose answer was asked again, or judged
    assert lost <= start.most.micro_usd
    assert resumed.usage_by_role["synthesizer"].micro_usd >= start.most.micro_usd
    assert f"{key} by 'synthesizer'" in caplog.text
    in_flight = 2 if slow == "reask" else 1  # the synthesis' first ask got no reply either
    calls = "2 model calls were" if in_flight == 2 else "1 model call was"
    assert f"run {run_id}: {calls} in flight" in caplog.text


def test_a_synthesis_reply_answers_each_of_its_asks() -> None:
    """A synthesis asked twice journals two intents and one reply (``calls=2``): a resume
    of the run that got it charges neither again; one with no reply charges both."""
    reply = ModelResponse(parts=(TextPart(text="ok"),), stop_reason="end_turn", model="m")
    starts = [
        ModelCallStarted(run_id="r", call_key=k, role="synthesizer", most=Usage(micro_usd=9))
        for k in ("synthesis/1", "synthesis/1#2")
    ]
    answered, unanswered = Replay(), Replay()
    for start in starts:
        answered._add(start)
        unanswered._add(start)
    answered._add(ModelCallFinished(run_id="r", call_key="synthesis/1", response=reply, calls=2))
    assert answered.unanswered() == []
    assert [s.call_key for s in unanswered.unanswered()] == ["synthesis/1", "synthesis/1#2"]
