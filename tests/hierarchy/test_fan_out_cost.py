"""What a fan-out's dispatch and its reports cost the planner (issue #22, row 4): a
report that readies no step while others of the plan are still out asks the
dispatcher nothing (no ``_dispatch_ready``, ``next_sends`` nor ``running_ids``); a
committed step nothing waits on makes no ``Dispatcher.committed`` call; a step that
depends on none is sent with no ``carried_outputs`` call. Counted exactly by the
interpreter's profiler over a warmed-up team's run; the runs' results and events
show the order and the concurrency limit still hold."""

from __future__ import annotations

from types import FrameType

import pytest

from regiment.hierarchy import Planner, RunResult, Team, Worker
from regiment.hierarchy.events import StepCompleted, StepDispatched
from regiment.hierarchy.run._actor import PlannerActor
from regiment.hierarchy.run._dispatch import Dispatcher
from regiment.hierarchy.run._versions import PlanVersions
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart

from .brains import Brain, plan_json
from .profiled import CallCounter

pytestmark = pytest.mark.anyio

_WIDE = 5  # a fan-out of five independent steps


async def _did(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
    return f"did {description}"


def _fan_out() -> list[dict[str, object]]:
    return [{"id": f"s{i}", "description": f"part {i}"} for i in range(1, _WIDE + 1)]


def _chain() -> list[dict[str, object]]:
    return [
        {"id": f"s{i}", "description": f"part {i}", "depends_on": [f"s{i - 1}"] if i > 1 else []}
        for i in range(1, 4)
    ]


def _diamond() -> list[dict[str, object]]:
    return [
        {"id": "s1", "description": "part 1"},
        {"id": "s2", "description": "part 2", "depends_on": ["s1"]},
        {"id": "s3", "description": "part 3", "depends_on": ["s1"]},
        {"id": "s4", "description": "part 4", "depends_on": ["s2", "s3"]},
    ]


async def _run(
    steps: list[dict[str, object]], codes: tuple[object, ...], concurrency: int = 8
) -> tuple[RunResult, dict[object, int]]:
    """One warmed run of ``steps``: its result, and the calls of each of ``codes``."""
    brain = Brain([plan_json(*steps)] * 2, work=_did)
    model = ScriptedModel(brain)
    team = Team(
        name="fan",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does parts", model=model)],
        concurrency=concurrency,
    )
    counts: dict[object, int] = dict.fromkeys(codes, 0)

    def matches(frame: FrameType, event: str, _: object) -> bool:
        if event == "call" and frame.f_code in counts:
            counts[frame.f_code] += 1
        return False

    async with team.start() as running:
        assert (await running.run("warm up")).status == "completed"
        with CallCounter(matches):
            result = await running.run("do the parts")
    assert result.status == "completed", result.status
    return result, counts


def _ids(result: RunResult) -> list[str]:
    return [step.step_id for step in result.steps]


def _order(result: RunResult) -> list[str]:
    """The run's step events in order: ``sent s1``, ``done s1``, ..."""
    order: list[str] = []
    for event in result.events:
        if isinstance(event, StepDispatched):
            order.append(f"sent {event.step_id}")
        elif isinstance(event, StepCompleted):
            order.append(f"done {event.step_id}")
    return order


_READY = PlannerActor._dispatch_ready.__code__
_NEXT = Dispatcher.next_sends.__code__
_RUNNING = Dispatcher.running_ids.__code__
_COMMITTED = Dispatcher.committed.__code__
_CARRIED = PlanVersions.carried_outputs.__code__


async def test_a_fan_outs_reports_ask_the_dispatcher_once_the_plan_is_done() -> None:
    # On the plan, then on the last report only (it ends the plan: the answer follows);
    # running_ids once more as the plan is indexed. Each report asked all three: 6 each on main.
    result, calls = await _run(_fan_out(), (_READY, _NEXT, _RUNNING))
    assert _ids(result) == [f"s{i}" for i in range(1, _WIDE + 1)]
    assert _order(result)[:_WIDE] == [f"sent s{i}" for i in range(1, _WIDE + 1)]
    assert result.answer
    assert calls == {_READY: 2, _NEXT: 2, _RUNNING: 2}


async def test_a_step_nothing_waits_on_is_committed_with_no_dispatcher_call() -> None:
    _, wide = await _run(_fan_out(), (_COMMITTED,))
    assert wide[_COMMITTED] == 0  # five on main
    chain, calls = await _run(_chain(), (_COMMITTED, _READY))
    assert _ids(chain) == ["s1", "s2", "s3"]
    # s1 and s2 ready the next step (each then dispatched); s3 readies none
    assert calls == {_COMMITTED: 2, _READY: 3 + 1}


async def test_a_step_that_depends_on_none_is_sent_with_no_carried_outputs_call() -> None:
    _, wide = await _run(_fan_out(), (_CARRIED,))
    assert wide[_CARRIED] == 0  # one a step on main
    _, chain = await _run(_chain(), (_CARRIED,))
    assert chain[_CARRIED] == 2  # s2 and s3 carry their dependency's output


async def test_a_diamond_waits_for_both_sides_and_a_narrow_team_sends_as_room_frees() -> None:
    # What the cut calls decided is still decided: s4 goes only once s2 and s3 are in;
    # with room for two steps at once, each report that frees room sends the next one.
    diamond, _ = await _run(_diamond(), ())
    order = _order(diamond)
    assert order[:2] == ["sent s1", "done s1"]
    assert order[-2:] == ["sent s4", "done s4"]
    assert sorted(order[2:6]) == ["done s2", "done s3", "sent s2", "sent s3"]
    narrow, calls = await _run(_fan_out(), (_READY,), concurrency=2)
    assert sorted(_ids(narrow)) == [f"s{i}" for i in range(1, _WIDE + 1)]
    order, out, most = _order(narrow), 0, 0
    for entry in order:  # never more than two steps out at once
        out += 1 if entry.startswith("sent") else -1
        most = max(most, out)
    assert most == 2
    assert len(order) == 2 * _WIDE
    # the plan, then each report while steps waited for room (three), then the last one
    assert calls[_READY] == 1 + 3 + 1
