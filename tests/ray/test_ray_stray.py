"""On a Ray replica too, a tool or a ``Prompts`` method that raises asyncio's
``CancelledError`` with nothing cancelling it fails its call or its step, and the
replica serves the next run; the prompts' was read as a lost replica ("WorkerLost:
its Ray replica ended a step without a report")."""

from __future__ import annotations

from types import ModuleType

import pytest

from regiment.errors import ConfigError, StepFailed

from ._ray_stray import CarelessPrompts, TonelessPrompts, stray_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_a_tool_that_raises_cancelled_error_is_one_failed_call(
    ray_session: ModuleType,
) -> None:
    team = stray_team("bad call", "bad sync call", "good call")
    async with team.start() as running:
        results = [await running.run(goal) for goal in ("first", "second", "third")]
    said = (
        "the tool said: CancelledError: the tool raised CancelledError while nothing had "
        "cancelled its call; a tool must not raise it itself"
    )
    assert [r.status for r in results] == ["completed"] * 3
    assert results[0].steps[0].output.startswith(said)
    assert results[1].steps[0].output.startswith(said)  # in the replica's thread too
    assert results[2].steps[0].output == "the tool said: 2"


async def test_prompts_that_raise_cancelled_error_fail_the_step_not_the_replica(
    ray_session: ModuleType,
) -> None:
    team = stray_team("bad call", "good call", prompts=CarelessPrompts())
    async with team.start() as running:
        with pytest.raises(StepFailed) as caught:
            await running.run("first")
        second = await running.run("second")
    assert caught.value.cause == (
        "step s1 (bad call) ended failed: the Prompts hook CarelessPrompts.step_request raised "
        "CancelledError while nothing had cancelled its call; fix that method (it must return "
        "the text), or remove it to use regiment's default"
    )
    assert second.steps[0].output == "the tool said: 2"


async def test_a_worker_system_hook_that_raises_names_itself_when_the_team_starts(
    ray_session: ModuleType,
) -> None:
    # As in-process: the replica's build said only "KeyError: 'tone'".
    team = stray_team("good call", prompts=TonelessPrompts())
    with pytest.raises(ConfigError) as caught:
        async with team.start():
            pass
    assert str(caught.value) == (
        "worker 'w': its Ray replicas did not start: worker 'w' cannot start: the Prompts "
        "hook TonelessPrompts.worker_system raised KeyError: 'tone'; fix that method (it "
        "must return the text), or remove it to use regiment's default"
    )
