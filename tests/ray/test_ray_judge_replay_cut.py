"""A resumed step on a Ray replica whose first judge's reply is replayed from the journal
and whose guard chain is then cut (the run cancelled while its second judge's call is
held) counts every model call once: the replayed judge reply neither twice (the
replica's report and the run's end) nor not at all (the chain never charged it), as an
in-process step does (tests/journal/test_judge_cut_ends.py). The held call is charged at
its most, as cut in flight, when the budget limits spending.

The run: one step, the clerk's reply asks for a refund that needs an approval, judged by
two reply guards (the first asks a scripted judge; the run pauses at the approval with
three replies journaled: the plan, the reply, the judge's); approved, resumed on the
replica with the second judge's model on a stand-in that never answers, cancelled once
that call is held.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

from regiment import Approve, Budget, Planner, Ray, ScriptedModel, Team
from regiment.hierarchy import RunResult
from regiment.journal import EventRecorded, ModelCallFinished, open_journal
from regiment.models import Usage

from ..hierarchy.cut_run import PRICE
from ..hierarchy.held_call import api, until_held
from ..models.standin import StandIn
from ._judged_refund import brain, clerk

__all__ = ("api",)

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


def _team(base_url: str | None, budget: Budget) -> Team:
    build = functools.partial(clerk, base_url)
    worker = dataclasses.replace(build(), placement=Ray(build=build, num_cpus=0))
    planner = Planner(model=ScriptedModel(brain, price=PRICE))
    return Team(name="shop", planner=planner, workers=[worker], budget=budget)


def _answered(records: Sequence[object]) -> tuple[Usage, int]:
    """What the journal says the models answered: usage, model calls."""
    finished = [r for r in records if isinstance(r, ModelCallFinished)]
    return sum((r.response.usage for r in finished), Usage()), sum(r.calls for r in finished)


@pytest.mark.parametrize("usd", [None, 1.0])
async def test_a_replicas_chain_cut_after_its_replayed_judge_counts_it_once(
    ray_session: ModuleType, api: StandIn, usd: float | None, tmp_path: Path
) -> None:
    journal = await open_journal(str(tmp_path / "runs.db"))
    budget = Budget(usd=usd)
    try:
        async with _team(None, budget).start(journal=journal) as running:
            paused = await running.run("refund order 7")
            (pending,) = paused.pending_approvals
            await running.approve(pending.request_id, Approve())
        async with (
            _team(api.base_url, budget).start(journal=journal) as running,
            running.resume_stream(paused.run_id) as events,
        ):
            async for _ in events:
                await until_held(api, 90)
                break  # leaving the block cancels the run: the chain is cut on the replica
        records = [e.record for e in await journal.read(paused.run_id)]
    finally:
        await journal.close()
    assert paused.status == "paused"
    assert paused.model_calls == 3  # the plan, the clerk's reply, its judge
    (*_, last) = [r for r in records if isinstance(r, EventRecorded) and r.kind == "RunCompleted"]
    ended = msgspec.convert(last.event["result"], RunResult)
    assert ended.status == "cancelled"
    assert api.requests  # (the second judge's call was made, and held: the chain was cut)
    answered, calls = _answered(records)
    assert calls == paused.model_calls  # nothing answered since the pause
    assert paused.usage == answered
    held = ended.estimated_usage  # the held call: at its most if spending is limited, else 0
    assert (held.input_tokens, held.output_tokens) == ((0, 0) if usd is None else (8, 200))
    assert ended.model_calls == calls + (usd is not None)  # the replayed judge once
    assert ended.tool_calls == paused.tool_calls == 1  # the refund asked
    assert ended.usage_by_role["planner"] == paused.usage_by_role["planner"]
    assert ended.usage_by_role["clerk"] == paused.usage_by_role["clerk"] + held
    assert ended.usage == answered + held
