"""For any dependency graph, completion order and concurrency, the planner sends
exactly the steps a full scan of the plan calls ready, in plan order, each time
a step is committed (the dispatcher keeps that set incrementally)."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import (
    Plan,
    PlanCreated,
    Planner,
    RunResult,
    StepCompleted,
    StepDispatched,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart

from .brains import Brain, all_blocked, plan_json

IDS = "abcdefgh"


@st.composite
def _graphs(draw: st.DrawFn) -> list[tuple[str, ...]]:
    """Each step's dependencies: any earlier steps (so the graph has no cycle)."""
    count = draw(st.integers(1, len(IDS)))
    return [
        tuple(draw(st.lists(st.sampled_from(IDS[:i]), unique=True)) if i else ())
        for i in range(count)
    ]


async def _run(
    graph: list[tuple[str, ...]], priorities: list[int], concurrency: int, backend: str
) -> RunResult:
    """Run the plan, finishing one started step at a time: the started one that
    comes first by ``priorities``."""
    gates = {IDS[i]: anyio.Event() for i in range(len(graph))}
    started: list[str] = []

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        started.append(description)
        await gates[description].wait()
        return f"did {description}"

    steps = [
        {"id": IDS[i], "description": IDS[i], "depends_on": list(deps)}
        for i, deps in enumerate(graph)
    ]
    model = ScriptedModel(Brain([plan_json(*steps)], work=work))
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model, max_concurrent_steps=8)],
        concurrency=concurrency,
    )
    result: list[RunResult] = []
    async with team.start() as running, anyio.create_task_group() as tg:

        async def one() -> None:
            result.append(await running.run("goal"))

        tg.start_soon(one)
        for _ in graph:
            await all_blocked(backend)
            waiting = [s for s in started if not gates[s].is_set()]
            assert waiting, f"no step is running; started: {started}"
            gates[min(waiting, key=lambda s: priorities[IDS.index(s)])].set()
    return result[0]


def _batches_against_a_full_scan(result: RunResult, concurrency: int) -> list[str]:
    """Replays the events: after the plan and after each commit, the steps sent
    next must be ``Plan.ready`` of that moment, cut to the concurrency left."""
    problems: list[str] = []
    plan: Plan | None = None
    committed: set[str] = set()
    running: set[str] = set()
    expected: list[str] | None = None
    sent: list[str] = []

    def close() -> None:
        if expected is not None and sent != expected:
            problems.append(f"sent {sent}, a full scan says {expected}")
        sent.clear()

    def scan() -> list[str]:
        assert plan is not None
        room = concurrency - len(running)
        return [s.id for s in plan.ready(committed, running)][: max(room, 0)]

    for event in result.events:
        match event:
            case PlanCreated(plan=created):
                close()
                plan = created
                expected = scan()
            case StepCompleted(step_id=step_id):
                close()
                running.discard(step_id)
                committed.add(step_id)
                expected = scan()
            case StepDispatched(step_id=step_id):
                sent.append(step_id)
                running.add(step_id)
            case _:
                pass
    close()
    return problems


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=30, deadline=None)
@given(
    graph=_graphs(),
    priorities=st.permutations(range(len(IDS))),
    concurrency=st.integers(1, 4),
)
def test_each_commit_sends_what_a_full_scan_finds_ready(
    backend: str, graph: list[tuple[str, ...]], priorities: list[int], concurrency: int
) -> None:
    result = anyio.run(_run, graph, priorities, concurrency, backend, backend=backend)
    assert result.status == "completed", result
    assert sorted(result.committed) == sorted(IDS[: len(graph)])
    assert _batches_against_a_full_scan(result, concurrency) == []
