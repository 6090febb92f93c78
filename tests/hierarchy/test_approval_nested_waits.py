"""A nested team's working steps go on while one of its calls waits for approval: the
top run pauses only when the nested run has nothing left to do but wait."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment.hierarchy import ApprovalRequested, Event, Planner, RunCompleted, Team, TeamWorker
from regiment.models import ScriptedModel
from regiment.tools import Approve

from .approval_team import Shop, nested_team, plan_json, step
from .brains import Brain

pytestmark = pytest.mark.anyio

# The nested run: c1's refund waits for approval while c2 (``slow``) still works.
_CHILD = plan_json(step("c1", "billing", "refund 5 30"), step("c2", "slow", "slow child"))
_TOP = plan_json(step("s1", "desk", "handle the refund"))


async def test_a_nested_step_that_works_is_not_cut_when_its_sibling_asks(
    tmp_path: Path,
) -> None:
    shop = Shop()
    team = nested_team(shop, _TOP, child_first=_CHILD, child_plans=(_CHILD,))
    seen: list[Event] = []
    async with team.start(journal=tmp_path / "runs.db") as running:
        with anyio.fail_after(10):
            async with running.stream("refund via desk") as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, ApprovalRequested):
                        await anyio.wait_all_tasks_blocked()  # a pause now would cut c2
                        shop.release.set()  # the working step finishes only now
        last = seen[-1]
        assert isinstance(last, RunCompleted), last
        paused = last.result
        # The run paused once the nested c2 was done, not at once (cutting it).
        assert paused.status == "paused"
        assert shop.slow_done == ["slow child"]
        (request,) = paused.pending_approvals
        assert (request.worker, request.step_id) == ("top/desk/shop/billing", "s1")
        await running.approve(request.request_id, Approve(), by="ana")
        with anyio.fail_after(10):
            done = await running.resume(paused.run_id)
    assert done.status == "completed"
    assert shop.refunds == [("5", 30)]
    # The nested run is journaled with its top run: the resume resumes it (its slow
    # step, committed before the pause, is not done again) and runs its approved call once.
    assert shop.slow_done == ["slow child"]


async def test_a_decision_while_a_nested_step_works_never_pauses_the_run(
    tmp_path: Path,
) -> None:
    shop = Shop()
    team = nested_team(shop, _TOP, child_first=_CHILD)
    seen: list[Event] = []
    async with team.start(journal=tmp_path / "runs.db") as running:
        with anyio.fail_after(10):
            async with running.stream("refund via desk") as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, ApprovalRequested):
                        await running.approve(event.request.request_id, Approve(), by="ana")
                        shop.release.set()
    last = seen[-1]
    assert isinstance(last, RunCompleted), last
    assert last.result.status == "completed"
    assert shop.refunds == [("5", 30)]
    assert shop.slow_done == ["slow child"]  # once: the run never paused


async def test_a_team_nested_two_deep_pauses_only_once_its_working_step_is_done(
    tmp_path: Path,
) -> None:
    shop = Shop()
    inner = nested_team(shop, _TOP, _TOP, child_first=_CHILD, child_plans=(_CHILD,))
    planner = Planner(model=ScriptedModel(Brain(plans=[plan_json(step("o1", "top", "go"))])))
    outer = Team(
        name="outer",
        planner=planner,
        workers=[TeamWorker(name="top", description="the top team", team=inner)],
    )
    async with outer.start(journal=tmp_path / "runs.db") as running:
        with anyio.fail_after(10):
            async with running.stream("refund via top") as events:
                async for event in events:
                    if isinstance(event, ApprovalRequested):
                        await anyio.wait_all_tasks_blocked()  # a pause now would cut c2
                        shop.release.set()
                    last = event
        assert isinstance(last, RunCompleted), last
        paused = last.result
        assert paused.status == "paused"
        assert shop.slow_done == ["slow child"]
        (request,) = paused.pending_approvals
        assert request.worker == "outer/top/top/desk/shop/billing"
        await running.approve(request.request_id, Approve(), by="ana")
        with anyio.fail_after(10):
            done = await running.resume(paused.run_id)
    assert done.status == "completed"
    assert shop.refunds == [("5", 30)]
