"""A plain run's end pays nothing for the money bookkeeping of resumed and guarded runs
(issue #22): a 1-step run with no journal and no guard calls neither the end's charge of
what planner-side judges spent (``_note_guards``) nor a resumed run's charge of the
replies it never replayed (``settle``): nothing can be left for them to charge. That
guarded and resumed runs still charge them as they end: tests/journal/test_judge_cut_ends.py,
test_judge_refused_journal.py, test_resume_counts_journal.py.

Counted by the interpreter's profiler over one run of a started team (after a first run
has warmed it up), so the counts are exact on either backend.
"""

from __future__ import annotations

from types import FrameType

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.run import _unreplayed
from regiment.hierarchy.run._ending import EndsRun
from regiment.hierarchy.run._guarded import GuardedActor
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .profiled import CallCounter

pytestmark = pytest.mark.anyio

_END = EndsRun._end.__code__
_CHARGES = (GuardedActor._note_guards.__code__, _unreplayed.settle.__code__)


def _charged_at_the_end(frame: FrameType, event: str, _: object) -> bool:
    caller = frame.f_back
    return (
        event == "call"
        and frame.f_code in _CHARGES
        and caller is not None
        and caller.f_code is _END
    )


async def test_a_plain_runs_end_calls_no_money_charge() -> None:
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 2))
    team = Team(
        name="plain",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
    )
    counter = CallCounter(_charged_at_the_end)
    async with team.start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do it")
    assert result.status == "completed"
    assert counter.count == 0  # 2 on main: one of each
