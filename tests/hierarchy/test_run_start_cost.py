"""What a caller of ``run(goal)`` does before its run may start (issue #22, row 5): when a
burst of callers starts in one loop turn, each caller's first step runs in the next one,
so every call there is paid as many times as there are callers, in one turn of the loop.

A plain run (no session, the team's concurrency) checks its goal with no call for the
session or the concurrency it did not give; the goal's text is checked in one call. Counted by the interpreter's profiler over
one run of a started team, so the counts are exact on either backend.
"""

from __future__ import annotations

from types import CodeType

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import Planner, Team, Worker, check_goal
from regiment.hierarchy._goal import check_session
from regiment.hierarchy._ranges import run_concurrency
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .profiled import CallCounter

pytestmark = pytest.mark.anyio


def _team() -> Team:
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 3))
    return Team(
        name="start",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
    )


async def _calls(code: CodeType, *, session: str | None, concurrency: int | None) -> int:
    counter = CallCounter(lambda frame, event, _: event == "call" and frame.f_code is code)
    async with _team().start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do it", session=session, concurrency=concurrency)
    assert result.status == "completed"
    return counter.count


async def test_a_plain_run_s_start_calls_no_check_for_what_it_did_not_give() -> None:
    # main called check_session(None) once a run, and run_concurrency twice: in the
    # caller's checks and where the started run works out its limit (the one left).
    assert await _calls(check_session.__code__, session=None, concurrency=None) == 0
    assert await _calls(run_concurrency.__code__, session=None, concurrency=None) == 1


@pytest.mark.parametrize("code", [check_session.__code__, run_concurrency.__code__])
async def test_a_run_given_a_session_and_a_concurrency_still_checks_them(code: CodeType) -> None:
    assert await _calls(code, session="s-1", concurrency=2) >= 1


@pytest.mark.parametrize(
    ("goal", "session", "says"),
    [
        ("a\x00b", None, "the goal holds a NUL character"),
        ("ok", "s\x00", "the session holds a NUL character"),
        ("bad \udcff", None, "the goal is not valid text"),
        ("ok", " ", "the session is blank"),
    ],
)
def test_goal_and_session_are_refused_as_before(goal: str, session: str | None, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        check_goal(goal, session)
