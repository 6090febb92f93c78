"""A resume whose Ray replica stops part-way through its step's replay counts the
journaled replies and tool calls the replica never reached (as an in-process step's
report does, tests/journal/test_resume_counts_journal.py): the replica's report said
it had replayed the whole attempt, so a clerk paused at its second reply's refund,
approved and resumed (forced) under ``Budget(model_calls=3)`` (its step's share pays
one call: the first reply, replayed) ended counting 2 of the 3 journaled replies and 1
of the 2 tool calls. Now the replica names what it replayed (``StepDone.replayed``)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from regiment import Approve, Budget
from regiment.journal import ModelCallFinished, open_journal
from regiment.models import Usage

from ..journal.paid_replies_team import GOAL
from . import _ray_paid as team_of

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_replica_stopped_part_way_counts_what_it_never_replayed(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        async with team_of.make_team(on_ray=True).start(journal=journal) as running:
            paused = await running.run(GOAL)
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
        team = team_of.make_team(on_ray=True, budget=Budget(model_calls=3))
        async with team.start(journal=journal) as running:
            resumed = await running.resume(paused.run_id, force=True)
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    replies = {r.call_key: r.response.usage for r in records if isinstance(r, ModelCallFinished)}
    assert sorted(replies) == ["plan/1", "step/1/s1/1", "step/1/s1/2"]  # nothing asked since
    assert (resumed.status, resumed.budget_exhausted) == ("partial", "model_calls")
    ((step, status),) = [(s.step_id, s.status) for s in resumed.steps]
    assert (step, status) == ("s1", "budget_exhausted")
    assert resumed.usage == paused.usage == sum(replies.values(), Usage())
    assert resumed.model_calls == paused.model_calls == 3
    assert resumed.tool_calls == paused.tool_calls == 2  # the note, the refund asked
