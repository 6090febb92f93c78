"""Independent steps run at once, dependent ones wait for what they depend on."""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import Planner, StepDispatched, Team, Worker
from regiment.models import ModelRequest, ScriptedModel, TextPart, ToolResultPart

from .brains import Brain, Overlap, plan_json

pytestmark = pytest.mark.anyio


def _team(brain: Brain, *, concurrency: int = 8, workers: tuple[str, ...] = ("w",)) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name=n, description=f"worker {n}", model=model) for n in workers],
        concurrency=concurrency,
    )


async def test_independent_steps_are_in_flight_together() -> None:
    overlap = Overlap(2)
    brain = Brain(
        [plan_json({"description": "research A"}, {"description": "research B"})], work=overlap
    )
    result = await _team(brain).run("compare A and B")
    assert overlap.peak == 2
    assert set(result.committed) == {"s1", "s2"}


async def test_dependent_step_waits_and_sees_only_its_dependencies() -> None:
    order: list[str] = []

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        order.append(description)
        return f"fact from {description}"

    plan = plan_json(
        {"id": "a", "description": "research A"},
        {"id": "b", "description": "research B"},
        {"id": "c", "description": "write up", "depends_on": ["a"]},
    )
    brain = Brain([plan], work=work)
    result = await _team(brain).run("write about A")
    assert order.index("write up") > order.index("research A")
    write_request = next(r for r in brain.worker_requests if "Your step (c)" in _text(r))
    assert "fact from research A" in _text(write_request)
    assert "fact from research B" not in _text(write_request)
    assert result.output_of("c") == "fact from write up"


async def test_team_concurrency_limit_holds() -> None:
    overlap = Overlap(2)
    brain = Brain([plan_json(*({"description": f"task {i}"} for i in range(6)))], work=overlap)
    result = await _team(brain, concurrency=2).run("six things")
    assert overlap.peak == 2
    assert len(result.committed) == 6
    dispatched = [e for e in result.events if isinstance(e, StepDispatched)]
    assert len(dispatched) == 6


async def test_steps_go_to_their_assigned_worker() -> None:
    brain = Brain(
        [
            plan_json(
                {"description": "pay", "worker": "billing"},
                {"description": "mail", "worker": "comms"},
            )
        ]
    )
    result = await _team(brain, workers=("billing", "comms")).run("pay and mail")
    by_step = {r.step_id: r.worker for r in result.steps}
    assert by_step == {"s1": "billing", "s2": "comms"}
    assert any(r.system.startswith("You are worker 'comms'") for r in brain.worker_requests)


async def test_nothing_to_do_goes_straight_to_synthesis() -> None:
    brain = Brain(['{"steps": []}'])
    result = await _team(brain).run("say hello")
    assert result.plan.steps == ()
    assert result.answer == "final answer"
    assert brain.worker_requests == []
    assert result.model_calls == 2


async def test_many_runs_at_once_on_one_team() -> None:
    brains: list[str] = [plan_json({"description": "only step"}) for _ in range(20)]
    brain = Brain(brains)
    results = []
    async with _team(brain).start() as running:

        async def one(i: int) -> None:
            results.append(await running.run(f"goal {i}"))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
    assert len(results) == 20
    assert len({r.run_id for r in results}) == 20
    assert all(r.committed == ("s1",) for r in results)


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))
