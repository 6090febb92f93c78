"""A model call in flight at a crash counts against a ``model_calls``-only budget too.

Only a budget that limited tokens or money journaled each model call's intent, so under
``Budget(model_calls=N)`` alone a run SIGKILLed while its worker's call was in flight
resumed with that call uncounted: the resume sent it again and went on to its limit by
its own count, so the provider was sent (and billed) one call more than the budget. Every
budgeted run's calls now journal their intents, and a resume charges each unanswered one
(one model call, at the most it may have spent).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import ModelCallStarted, nested_run_id, open_journal

from .in_flight_team import SLOW_CALL, make_team
from .killed_child import journal_at, killed_child
from .test_crash_in_flight import CHILD

pytestmark = pytest.mark.anyio

CALLS = 6  # the plan, the worker's (one kept for the synthesis), the synthesis
NESTED_CALLS = 8  # the plan above, and the nested run's six and its answer's synthesis


@pytest.mark.parametrize(
    ("anyio_backend", "kind"),
    [("asyncio", "sqlite"), ("trio", "sqlite"), ("asyncio", "postgres"), ("trio", "postgres")],
)
async def test_a_call_in_flight_at_a_crash_counts_against_model_calls(
    anyio_backend: str,
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    where, bill = journal_at(kind, tmp_path, request), tmp_path / "bill.txt"
    args = [where, str(bill), "0", "worker", "flat", anyio_backend, str(CALLS)]
    async with killed_child(CHILD, args, tmp_path / "child.log", "in flight", 60) as run_id:
        pass
    sent = bill.read_text().splitlines()
    assert [line.split()[0] for line in sent] == ["planner", *["worker"] * SLOW_CALL]
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        with caplog.at_level(logging.WARNING, logger="regiment.run"):
            async with make_team(bill, None, calls=CALLS).start(journal=journal) as running:
                resumed = await running.resume(run_id)
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    billed = bill.read_text().splitlines()
    # The provider was sent no more calls than the budget allows, and the run counts each.
    assert len(billed) <= CALLS, billed
    assert resumed.model_calls >= len(billed), (resumed.model_calls, billed)
    assert resumed.budget_exhausted == "model_calls"
    key = f"step/1/s1/{SLOW_CALL}"
    starts = [r for r in records if isinstance(r, ModelCallStarted) and r.call_key == key]
    assert [s.role for s in starts] == ["w", "w"]  # before the crash, and sent again
    assert f"run {run_id}: 1 model call was in flight" in caplog.text
    assert f"{key} by 'w'" in caplog.text


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_nested_runs_call_in_flight_counts_against_the_run_aboves_model_calls(
    anyio_backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run above limits only ``model_calls``; the nested team (a ``TeamWorker``) has
    no budget of its own: its step's share holds its calls, so they journal their intents
    too, and the one in flight at the crash is counted as the nested run resumes."""
    where, bill = str(tmp_path / "runs.db"), tmp_path / "bill.txt"
    args = [where, str(bill), "0", "worker", "nested", anyio_backend, str(NESTED_CALLS)]
    async with killed_child(CHILD, args, tmp_path / "child.log", "in flight", 60) as run_id:
        pass
    sent = bill.read_text().splitlines()
    assert [line.split()[0] for line in sent] == ["planner", "planner", *["worker"] * SLOW_CALL]
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    team = make_team(bill, None, nested=True, calls=NESTED_CALLS)
    try:
        with caplog.at_level(logging.WARNING, logger="regiment.run"):
            async with team.start(journal=journal) as running:
                resumed = await running.resume(run_id)
        inner = nested_run_id(run_id, 1, "s1")
        records = [e.record for e in await journal.read(inner)]
    finally:
        await journal.close()
    billed = bill.read_text().splitlines()
    assert len(billed) <= NESTED_CALLS, billed
    assert resumed.model_calls >= len(billed), (resumed.model_calls, billed)
    key = f"step/1/s1/{SLOW_CALL}"
    starts = [r for r in records if isinstance(r, ModelCallStarted) and r.call_key == key]
    assert [s.role for s in starts] == ["w", "w"]  # before the crash, and sent again
    assert f"run {inner}: 1 model call was in flight" in caplog.text
