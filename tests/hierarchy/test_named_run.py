"""``RunningTeam.stream(goal, run_id=...)``: the run goes by the id given (the service's
``Idempotency-Key`` runs do); an id in use or malformed is a ``ConfigError`` before
anything starts, and a journal that has the id refuses the run (``JournalError``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.errors import ConfigError, JournalError
from regiment.hierarchy import RunCompleted, RunStarted
from regiment.journal import open_journal
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "credit 7 50"))


async def test_a_run_goes_by_the_id_given_and_a_journal_refuses_it_twice(tmp_path: Path) -> None:
    shop = Shop()
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        async with shop_team(shop, PLAN, PLAN).start(journal=journal) as running:
            async with running.stream("credit order 7", run_id="run-key-abc") as events:
                seen = [event async for event in events]
            assert isinstance(seen[0], RunStarted)
            assert seen[0].run_id == "run-key-abc"
            assert isinstance(seen[-1], RunCompleted)
            assert (await journal.get_run("run-key-abc")).goal == "credit order 7"
            with pytest.raises(JournalError, match="already has a run 'run-key-abc'"):
                async with running.stream("credit order 7", run_id="run-key-abc") as events:
                    [event async for event in events]
    finally:
        await journal.close()
    assert shop.refunds == [("credit:7", 50)]


@pytest.mark.parametrize("run_id", ["", "run~1", "a/b", "two words", "nul\x00"])
async def test_a_malformed_id_is_refused_before_the_run_starts(run_id: str) -> None:
    shop = Shop()
    async with shop_team(shop, PLAN).start() as running:
        with pytest.raises(ConfigError, match="in use or malformed"):
            async with running.stream("credit order 7", run_id=run_id) as events:
                [event async for event in events]
        assert running.active_runs == 0
    assert shop.refunds == []


async def test_an_id_in_use_is_refused() -> None:
    shop = Shop()
    async with (
        shop_team(shop, PLAN, PLAN).start() as running,
        running.stream("credit order 7", run_id="mine") as events,
    ):
        async for event in events:
            if isinstance(event, RunStarted):
                with pytest.raises(ConfigError, match="'mine' is in use"):
                    async with running.stream("again", run_id="mine") as other:
                        [e async for e in other]
    assert shop.refunds == [("credit:7", 50)]
