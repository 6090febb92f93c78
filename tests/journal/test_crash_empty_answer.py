"""A run killed after its synthesis' reply was journaled ends, once resumed, as it would have.

An empty answer that the run's money could not pay to ask again for ends the run
``partial`` (``budget_exhausted == "usd"``). Killed after that reply was journaled and
before the run's end was (its answer guard still judging), the resumed run replayed the
reply as a plain answer and completed with ``''``. A reply asked again lost its second
call: the resumed run counted one model call fewer than the uncrashed one. The journal
now keeps, with the synthesis' reply, the calls it took and the limit that kept it from
being asked again, and a resume ends on them.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from regiment.hierarchy import RunResult
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import EventRecorded, Journal, open_journal

from .empty_answer_team import GOAL, make_team
from .killed_child import journal_at, killed_child

pytestmark = pytest.mark.anyio

CHILD = Path(__file__).with_name("empty_answer_team.py")


async def _tight_usd() -> float:
    """Enough money for the plan, the step and the synthesis' first ask, whose empty reply
    spends what is left: nothing is left to ask again."""
    unheld = await make_team(None).run(GOAL)
    synth = unheld.usage_by_role["synthesizer"]
    before = unheld.usage.micro_usd - synth.micro_usd
    return (before + synth.input_tokens + 200) / 1e6


async def _baseline(where: str, usd: float | None, again: bool) -> tuple[RunResult, list[str]]:
    journal = await open_journal(where)
    try:
        async with make_team(usd, again=again).start(journal=journal) as running:
            result = await running.run(GOAL)
        return result, await _events(journal, result.run_id)
    finally:
        await journal.close()


async def _events(journal: Journal, run_id: str) -> list[str]:
    return [
        e.record.kind for e in await journal.read(run_id) if isinstance(e.record, EventRecorded)
    ]


async def _killed_after_synthesis(where: str, usd: float | None, mode: str, log: Path) -> str:
    """Run the team in a child, wait until its synthesis' reply is committed (the answer
    guard holds the run), SIGKILL it: the run's id."""
    async with killed_child(CHILD, [where, str(usd or 0), mode], log, "ready", 30) as run_id:
        with anyio.fail_after(30, shield=True):
            journal = await open_journal(where)
            try:  # the heartbeat commits it within a second: another process's, polled
                for _ in iter(int, 1):  # no event to wait on
                    if await journal.model_response(run_id, "synthesis/1") is not None:
                        break
                    await anyio.sleep(0.05)
            finally:
                await journal.close()
        return run_id


async def _resumed(
    where: str, run_id: str, usd: float | None, again: bool
) -> tuple[RunResult, list[str]]:
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        assert (await journal.get_run(run_id)).status == "stalled"
        team = make_team(usd, again=again)
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id)
        assert (await journal.get_run(run_id)).status == result.status
        return result, await _events(journal, run_id)
    finally:
        await journal.close()


def _same_end(resumed: RunResult, baseline: RunResult) -> None:
    def end(r: RunResult) -> tuple[object, ...]:
        return (r.status, r.answer, r.output, r.budget_exhausted, r.committed, r.model_calls)

    assert end(resumed) == end(baseline)
    assert resumed.usage == baseline.usage


@pytest.mark.parametrize(
    ("anyio_backend", "kind"), [("asyncio", "sqlite"), ("trio", "postgres")], indirect=False
)
async def test_an_unpaid_empty_answer_ends_the_resumed_run_partial(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    usd = await _tight_usd()
    baseline, baseline_events = await _baseline(
        journal_at(kind, tmp_path, request, "a"), usd, False
    )
    assert (baseline.status, baseline.budget_exhausted) == ("partial", "usd")
    assert baseline.answer == "Partial result (budget exhausted: usd).\ns1: done"
    where = journal_at(kind, tmp_path, request, "b")
    run_id = await _killed_after_synthesis(where, usd, "empty", tmp_path / "child.log")
    resumed, events = await _resumed(where, run_id, usd, False)
    # It completed with the answer '' (the replayed reply taken as the answer).
    _same_end(resumed, baseline)
    assert events == baseline_events  # one BudgetExhausted, then RunCompleted
    assert events.count("BudgetExhausted") == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_answer_asked_again_counts_both_calls_when_resumed(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    baseline, _ = await _baseline(str(tmp_path / "a.db"), None, True)
    assert (baseline.status, baseline.answer, baseline.model_calls) == (
        "completed",
        "the answer",
        4,
    )
    where = str(tmp_path / "b.db")
    run_id = await _killed_after_synthesis(where, None, "again", tmp_path / "child.log")
    resumed, _ = await _resumed(where, run_id, None, True)
    _same_end(resumed, baseline)  # model_calls was 3: the second ask was not counted
