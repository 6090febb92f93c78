"""A replica killed (its process only: the program goes on) while its model call is in
flight, under a money budget and with no journal: the live run charges that call at the
most it could have spent, as a resume charges one in flight at a crash
(``test_ray_in_flight``), since the provider bills it though its reply never came; the
step's retry on the other replica sends it again."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy._replay import Replay
from regiment.journal import open_journal
from regiment.models import Usage, priced

from ..models.standin import StandIn
from ._held import holding_api, kill_the_replica_while_it_holds
from ._in_flight import CLAUDE, GOAL, USD, noting_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


@pytest.fixture
async def api() -> AsyncIterator[StandIn]:
    async for server in holding_api():
        yield server


@pytest.mark.parametrize("journaled", [False, True], ids=["no-journal", "journal"])
async def test_a_call_in_flight_on_a_lost_replica_is_charged_at_its_most(
    ray_session: ModuleType,
    api: StandIn,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    journaled: bool,
) -> None:
    caplog.set_level(logging.WARNING, logger="regiment.run")
    journal = await open_journal(str(tmp_path / "runs.db")) if journaled else None
    try:
        async with (
            noting_team(api.base_url, replicas=2).start(journal=journal) as running,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(kill_the_replica_while_it_holds, api)
            result = await running.run(GOAL)
        entries = [] if journal is None else await journal.read(result.run_id)
    finally:
        if journal is not None:
            await journal.close()
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert len(api.requests) == 3  # the held call was sent again by the retry, and answered
    answered = priced(Usage(input_tokens=11, output_tokens=7), CLAUDE).micro_usd
    spent = result.usage_by_role["w"]
    # Billed by the stand-in: three calls (the held one at least as dear as an answered
    # one); counted: the two answered, the lost one at its most, within the budget.
    assert spent.micro_usd >= 3 * answered
    assert result.usage.micro_usd <= USD * 1_000_000
    # the worker's three (the lost one counted), the planner's plan and its synthesis
    assert result.model_calls == 3 + 2, result.events
    (warned,) = [r for r in caplog.records if "died with 1 model call in flight" in r.getMessage()]
    said = warned.getMessage()
    assert "worker 'w', step s1" in said
    assert "(step/1/s1/2)" in said
    most = int(float(re.findall(r"\$(\d+\.\d+)", said)[0]) * 1_000_000 + 0.5)
    assert spent.micro_usd == 2 * answered + most > 3 * answered
    if not journaled:
        return
    # A later resume counts it once: from the journal (its intent, then the retry's for
    # the same key, then the retry's reply), not again in the step's committed report.
    replay = Replay.of(entries)
    ((version, step_id), report), *_ = replay.committed.items()
    assert (version, step_id, report.usage.micro_usd) == (1, "s1", 2 * answered)
    (lost,) = replay.unanswered()
    assert (lost.call_key, lost.role, lost.most.micro_usd) == ("step/1/s1/2", "w", most)
