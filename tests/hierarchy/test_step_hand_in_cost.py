"""A step's report goes back with no frame of its own (issue #22): the worker's runner
hands it to the planner's ``send_here`` itself (a method between was a Python call a
step), and the planner's turn on it, taken in the runner's task, ends with no call when
no task waits for the turn (``_pass_turn`` was a call a step). Counted exactly by the
interpreter's profiler over runs of a warmed-up team, on both backends; what a report
still does (every step committed in order, a full planner mailbox waited on, a turn
handed to a waiting task) is tested in ``test_report_turn.py`` and
``test_planner_turns.py``."""

from __future__ import annotations

from types import FrameType

import pytest

from regiment.actors import ActorRef
from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.run._turns import TakesTurns
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .profiled import CallCounter, Matches

pytestmark = pytest.mark.anyio


async def _counted(matches: Matches, steps: int) -> int:
    """Calls ``matches`` accepts in one run of a ``steps``-step sequential plan."""
    plan = plan_json(
        *(
            {"id": f"s{i}", "description": f"part {i}", "depends_on": [f"s{i - 1}"] if i else []}
            for i in range(steps)
        )
    )
    model = ScriptedModel(Brain([plan] * 2))
    team = Team(
        name="hand-in",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does parts", model=model)],
    )
    counter = CallCounter(matches)
    async with team.start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do the parts")
    assert result.status == "completed"
    assert [s.step_id for s in result.steps] == [f"s{i}" for i in range(steps)]
    return counter.count


async def test_a_runner_hands_its_report_to_send_here_itself() -> None:
    send_here, steps = ActorRef.send_here.__code__, StepActor._steps.__code__

    def from_the_runner(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code is send_here
            and caller is not None
            and caller.f_code is steps
        )

    assert await _counted(from_the_runner, 3) == 3  # every report; none on main (a frame between)


async def test_a_report_turn_nobody_waits_for_ends_with_no_call() -> None:
    passes = TakesTurns._pass_turn.__code__

    def passed(frame: FrameType, event: str, _: object) -> bool:
        return event == "call" and frame.f_code is passes

    # The planner's own turns (its model replies) still pass it; a step's report none.
    assert await _counted(passed, 4) == await _counted(passed, 1)
