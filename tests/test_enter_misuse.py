"""An async context manager of the public API used without ``async with`` says so.

``running = team.start(); await running.run(goal)`` raised Python's own
``AttributeError: '_AsyncGeneratorContextManager' object has no attribute 'run'``, and
``await team.start()`` its ``TypeError: object _AsyncGeneratorContextManager can't be
used in 'await' expression``: neither names the fix. ``MCPHub.open()``,
``open_actor_system()`` and a stream (``running.stream(goal).ending``) did the same.
Each is now a ``ConfigError`` showing the ``async with`` line, and still the builtin
it was (``AttributeError``, ``TypeError``) for code that caught that. Nothing starts.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from regiment.actors import open_actor_system
from regiment.errors import ConfigError
from regiment.hierarchy import Planner, RunningTeam, Team, Worker
from regiment.models import ScriptedModel
from regiment.tools import MCPHub
from tests.hierarchy.brains import Brain, plan_json

pytestmark = pytest.mark.anyio

START = (
    "team.start() is an async context manager, which has no 'run': enter it, `async with "
    "team.start() as running:`, and use `running.run`; leaving the block stops the team "
    "(for one run, `await team.run(goal)` starts and stops it)"
)


def _team(brain: Brain) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="works", model=model)],
    )


def _refused(use: Callable[[], object], builtin: type[Exception]) -> str:
    with pytest.raises(ConfigError) as caught:
        use()
    assert isinstance(caught.value, builtin)
    return str(caught.value)


async def test_team_start_used_without_async_with_says_how_to_enter_it() -> None:
    brain = Brain([plan_json({"description": "x"})])
    team = _team(brain)
    started = team.start()
    assert _refused(lambda: started.run, AttributeError) == START  # type: ignore[attr-defined]
    assert not hasattr(started, "stream")  # an AttributeError all the same
    assert _refused(lambda: started.__await__(), TypeError) == (  # type: ignore[attr-defined]
        "`await team.start()` does not enter it: write `async with team.start() as running:`; "
        "leaving the block stops the team (for one run, `await team.run(goal)` starts and "
        "stops it)"
    )
    assert "`with team.start()` does not enter it" in _refused(
        lambda: started.__enter__(),  # type: ignore[attr-defined]
        TypeError,
    )
    with pytest.raises(AttributeError, match="'TeamStart' object has no attribute '_x'"):
        _ = started._x  # type: ignore[attr-defined]  # Python's own probes go on as ever
    assert not brain.plan_requests  # nothing started
    async with team.start() as running:  # the right use, as ever
        assert isinstance(running, RunningTeam)
        assert (await running.run("go")).status == "completed"


async def test_await_and_with_of_team_start_are_refused_as_they_are_written() -> None:
    team = _team(Brain([]))
    with pytest.raises(ConfigError, match=r"^`await team.start\(\)` does not enter it"):
        await team.start()  # type: ignore[misc]
    with (
        pytest.raises(ConfigError, match=r"^`with team.start\(\)` does not enter it"),
        team.start(),  # type: ignore[attr-defined]
    ):
        pass


def test_an_mcp_hub_and_an_actor_system_used_unentered_say_how_to_enter_them() -> None:
    hub = MCPHub.open()
    assert _refused(lambda: hub.worker_tools, AttributeError) == (  # type: ignore[attr-defined]
        "MCPHub.open() is an async context manager, which has no 'worker_tools': enter it, "
        "`async with MCPHub.open() as hub:`, and use `hub.worker_tools`; leaving the block "
        "closes its connections and stops its servers"
    )
    system = open_actor_system()
    assert _refused(lambda: system.spawn, AttributeError) == (  # type: ignore[attr-defined]
        "open_actor_system() is an async context manager, which has no 'spawn': enter it, "
        "`async with open_actor_system() as system:`, and use `system.spawn`; every actor "
        "runs inside the block"
    )


async def test_a_stream_asked_for_its_events_attributes_unentered_says_to_enter_it() -> None:
    brain = Brain([plan_json({"description": "x"})])
    async with _team(brain).start() as running:
        stream = running.stream("goal")
        said = _refused(lambda: stream.ending, AttributeError)  # type: ignore[attr-defined]
        assert said == (
            "running.stream(goal) is an async context manager, which has no 'ending': enter "
            "it, `async with running.stream(goal) as events:`, and use `events.ending` (the "
            "block owns the run: leaving it early cancels the run)"
        )
        assert not brain.plan_requests  # nothing started
        async with stream as events:
            async for _ in events:
                pass
        assert events.ending is not None
