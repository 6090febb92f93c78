"""A step's report to a run with no journal, not nested, is taken by its idle planner as
a plain call in the worker's runner task (``_handle_now``: no turn's coroutine, issue
#22). When the steps it readies find a worker's mailbox full, what is left (the sends
that wait for room) goes on in a task of the planner's own, and the planner's turn is
held until it ends: no other message is handled before every readied step is sent."""

from __future__ import annotations

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.events import StepCompleted, StepDispatched
from regiment.hierarchy.run._turns import TakesTurns
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .profiled import CallCounter

pytestmark = pytest.mark.anyio

# More steps ready at once than a worker's mailbox holds (256, ``spawn_worker``).
_FAN_OUT = 300


async def test_a_fan_out_past_a_full_mailbox_holds_the_planners_turn_until_all_are_sent() -> None:
    steps = [{"id": "s0", "description": "first"}] + [
        {"id": f"t{i}", "description": f"then {i}", "depends_on": ["s0"]} for i in range(_FAN_OUT)
    ]
    plan = plan_json(*steps)
    team = Team(
        name="wide",
        planner=Planner(model=ScriptedModel(Brain([plan])), max_steps=_FAN_OUT + 1),
        workers=[Worker(name="w", description="does steps", model=ScriptedModel(Brain([])))],
        concurrency=_FAN_OUT + 1,
    )
    end_turn = TakesTurns._end_turn.__code__
    ended = CallCounter(lambda frame, event, _: event == "call" and frame.f_code is end_turn)
    with ended:
        result = await team.run("do them all")
    assert result.status == "completed"
    assert sorted(s.step_id for s in result.steps) == sorted(
        ["s0", *(f"t{i}" for i in range(_FAN_OUT))]
    )
    # s0's report readied them all: the sends past the full mailbox went on in a task
    # (its first entry; a resumed wait counts again, so at least one)...
    assert ended.count >= 1
    # ...and held the turn: every readied step was dispatched before any of their
    # reports (queued meanwhile) was taken.
    kinds = [
        type(e).__name__
        for e in result.events
        if isinstance(e, StepDispatched | StepCompleted) and e.step_id != "s0"
    ]
    assert kinds == ["StepDispatched"] * _FAN_OUT + ["StepCompleted"] * _FAN_OUT
