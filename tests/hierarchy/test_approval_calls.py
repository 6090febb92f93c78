"""Calls of one step that wait for decisions, one of them decided: its body runs to its
end before the run pauses; a decision taken as the run pauses waits for the resume; a
request whose step a replan cut is withdrawn, not left pending."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment import Approve, Planner, ScriptedModel, Team, TeamWorker, Worker
from regiment.errors import ApprovalError
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Check,
    Event,
    RunCompleted,
    StepCompleted,
)
from regiment.hierarchy._approvals import ApprovalDesk, ApprovalSettled, Notice, StepAt
from regiment.journal import open_journal
from regiment.models import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart
from regiment.tools import ApprovalDecision, ApprovalRequest, Deny, tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

_BOTH = plan_json(
    {"id": "s1", "description": "refund 1 and 2", "worker": "billing"},
    {"id": "s2", "description": "slow work", "worker": "slow"},
)


class Refunds:
    """A refund tool whose body starts, then ends once ``go`` is set; and a slow step."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.started = anyio.Event()
        self.go = anyio.Event()
        self.slow_go = anyio.Event()
        self.hold = anyio.Event()  # the ``held work`` steps end once set

    async def work(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description == "slow work":
            await self.slow_go.wait()
            return "slow done"
        if description == "held work":
            await self.hold.wait()
            return "held done"
        if results:
            return "; ".join(str(r.content) for r in results)
        orders = [w for w in description.split() if w.isdigit()]
        calls = tuple(
            ToolCallPart(id=f"c{o}", name="refund", arguments={"order": o}) for o in orders
        )
        return ModelResponse(parts=calls, stop_reason="tool_use", model="scripted")

    def team(self, *plans: str) -> Team:
        @tool(requires_approval=True)
        async def refund(order: str) -> str:
            """Refunds an order."""
            self.log.append(f"start {order}")
            self.started.set()
            await self.go.wait()
            self.log.append(f"end {order}")
            return f"refunded {order}"

        model = ScriptedModel(Brain(plans=list(plans), work=self.work))
        return Team(
            name="shop",
            planner=Planner(model=model),
            workers=[
                Worker(name="billing", description="refunds", model=model, tools=[refund]),
                Worker(name="slow", description="takes its time", model=model),
            ],
            checks={"fails": Check(description="never passes", predicate=lambda r: False)},
        )

    def top_team(self, child: Team, *plans: str) -> Team:
        """A top team whose ``desk`` worker is ``child`` (and ``slow``, as the shop's)."""
        model = ScriptedModel(Brain(plans=list(plans), work=self.work))
        return Team(
            name="top",
            planner=Planner(model=model),
            workers=[
                TeamWorker(name="desk", description="the shop team", team=child),
                Worker(name="slow", description="takes its time", model=model),
            ],
        )

    async def approve_first_as_the_slow_step_ends(self, team: Team, slow_step: str) -> None:
        """Run ``team``: of the two refunds that wait, approve the first; let the slow
        step end while its body runs; then the run must pause only once the body is done
        (run once, to its end), the second request still pending."""
        asked: list[ApprovalRequest] = []
        async with team.start() as running, running.stream("refund") as events:
            with anyio.fail_after(10):
                async for event in events:
                    if isinstance(event, ApprovalRequested):
                        asked.append(event.request)
                        if len(asked) == 2:
                            await running.approve(asked[0].request_id, Approve())
                            await self.started.wait()
                            self.slow_go.set()  # the slow step ends while the body runs
                    if isinstance(event, StepCompleted) and event.step_id == slow_step:
                        await anyio.wait_all_tasks_blocked()  # a pause now would cut the body
                        self.go.set()
                    last = event
        assert isinstance(last, RunCompleted)
        assert last.result.status == "paused"
        order = asked[0].arguments["order"]
        assert self.log == [f"start {order}", f"end {order}"]
        assert [r.request_id for r in last.result.pending_approvals] == [asked[1].request_id]


async def test_an_approved_call_runs_to_its_end_while_its_sibling_still_waits() -> None:
    """s1's two refunds wait; the first is approved and its body runs while s2 ends:
    the run must not pause then (cutting the refund halfway), only once it is done."""
    shop = Refunds()
    await shop.approve_first_as_the_slow_step_ends(shop.team(_BOTH), "s2")


async def test_a_nested_step_whose_approved_call_ends_while_its_sibling_waits_pauses_the_run() -> (
    None
):
    """The same one team down: once the approved body is done, only waits are left in
    the nested run, and no step reported: the top run must still hear of it and pause."""
    shop = Refunds()
    child = shop.team(plan_json({"id": "c1", "description": "refund 1 and 2", "worker": "billing"}))
    top_plan = plan_json(
        {"id": "t1", "description": "refunds via the shop", "worker": "desk"},
        {"id": "t2", "description": "slow work", "worker": "slow"},
    )
    await shop.approve_first_as_the_slow_step_ends(shop.top_team(child, top_plan), "t2")


async def test_a_decision_taken_as_the_run_pauses_is_kept_for_the_resume(
    tmp_path: Path,
) -> None:
    """Both refunds wait and nothing else goes on, so the run pauses: a decision that
    comes while it winds down must not start a body the pause then cuts."""
    shop = Refunds()
    one_step = plan_json({"id": "s1", "description": "refund 1 and 2", "worker": "billing"})
    async with shop.team(one_step).start(journal=tmp_path / "runs.db") as running:
        asked: list[ApprovalRequest] = []
        with anyio.fail_after(10):
            async with running.stream("refund") as events:
                async for event in events:
                    if isinstance(event, ApprovalRequested):
                        asked.append(event.request)
                        if len(asked) == 2:  # the run is pausing by now
                            await running.approve(asked[0].request_id, Approve(), by="ana")
                            await anyio.wait_all_tasks_blocked()
                    last = event
        assert isinstance(last, RunCompleted)
        assert last.result.status == "paused"
        assert shop.log == []  # no body started, so none was cut
        for request in await running.pending_approvals(last.result.run_id):
            await running.approve(request.request_id, Approve(), by="ana")
        shop.go.set()
        with anyio.fail_after(10):
            done = await running.resume(last.result.run_id)
    assert done.status == "completed", done.answer
    assert sorted(shop.log) == ["end 1", "end 2", "start 1", "start 2"]  # each body once


async def test_a_decision_while_the_run_winds_down_to_a_pause_wakes_no_call() -> None:
    """The run has decided to pause (its waiting calls are about to be cut): a decision
    now would start a body the pause cuts halfway. It is recorded for the resume, and
    the run's planner hears of it (not pending any more); without a journal to keep it
    for the resume, ``approve`` says the run has paused."""
    desk = ApprovalDesk()
    notices: list[Notice] = []

    async def notify(notice: Notice) -> None:
        notices.append(notice)

    desk.open_run("run-1", notify)
    request = ApprovalRequest(
        tool_name="refund", call_id="c1", arguments={}, request_id="apr-1", run_id="run-1"
    )
    woke: list[ApprovalDecision] = []

    async def call() -> None:
        woke.append(await desk.wait(request, None, StepAt("run-1", 1, "s1")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        desk.pausing("run-1")
        assert desk.claim("apr-1", Approve()) is False  # not live: it pauses
        await desk.settle("apr-1", Approve(), "ana", journaled=True)
        await anyio.wait_all_tasks_blocked()
        assert woke == []  # the call was not woken: the pause cuts it before its body
        tg.cancel_scope.cancel()
    assert isinstance(notices[-1], ApprovalSettled)
    assert desk.pending("run-1") == ()


async def test_a_request_whose_step_a_replan_cut_is_withdrawn(tmp_path: Path) -> None:
    shop = Refunds()
    first = plan_json(
        {"id": "s1", "description": "refund 1", "worker": "billing"},
        {"id": "s2", "description": "slow work", "worker": "slow", "check": "fails"},
    )
    second = plan_json({"id": "s3", "description": "refund 2", "worker": "billing"})
    seen: list[Event] = []
    async with shop.team(first, second).start(journal=tmp_path / "runs.db") as running:
        with anyio.fail_after(10):
            async with running.stream("refund") as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, ApprovalRequested) and event.request.step_id == "s1":
                        shop.slow_go.set()  # s2 fails its check: v2 replaces s1
        last = seen[-1]
        assert isinstance(last, RunCompleted)
        paused = last.result
        stale, fresh = (e.request for e in seen if isinstance(e, ApprovalRequested))
        assert (stale.plan_version, fresh.plan_version) == (1, 2)
        # Only the request that can still run is pending, here and in the journal.
        assert [r.request_id for r in paused.pending_approvals] == [fresh.request_id]
        assert paused.answer == "paused: 1 approval pending"
        listed = await running.pending_approvals(paused.run_id)
        assert [r.request_id for r in listed] == [fresh.request_id]
        (withdrawn,) = (e for e in seen if isinstance(e, ApprovalResolved))
        assert (withdrawn.request_id, withdrawn.decision) == (stale.request_id, "deny")
        assert withdrawn.reason.startswith("withdrawn: step s1 of plan v1 ended (cancelled)")
        with pytest.raises(ApprovalError, match="withdrawn: step s1"):
            await running.approve(stale.request_id, Approve())
        await running.approve(fresh.request_id, Approve())
        shop.go.set()
        with anyio.fail_after(10):
            done = await running.resume(paused.run_id)
    assert done.status == "completed", done.answer
    assert shop.log == ["start 2", "end 2"]  # order 1's refund never ran


async def test_a_request_whose_nested_step_the_nested_replan_cut_is_withdrawn_at_once(
    tmp_path: Path,
) -> None:
    """The same one team down: the nested run replans while c1's refund waits. The
    request is withdrawn at once (its step cannot run again), not once the top step it
    serves ends: while the top run's other step still works, only the fresh request of
    the nested run's new plan is pending, on the desk and in the journal."""
    shop = Refunds()
    child = shop.team(
        plan_json(
            {"id": "c1", "description": "refund 1", "worker": "billing"},
            {"id": "c2", "description": "slow work", "worker": "slow", "check": "fails"},
        ),
        plan_json({"id": "c3", "description": "refund 2", "worker": "billing"}),
    )
    top = shop.top_team(
        child,
        plan_json(
            {"id": "t1", "description": "refunds via the shop", "worker": "desk"},
            {"id": "t2", "description": "held work", "worker": "slow"},
        ),
    )
    journal_path = tmp_path / "runs.db"
    seen: list[Event] = []
    async with top.start(journal=journal_path) as running:
        with anyio.fail_after(10):
            async with running.stream("refund") as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, ApprovalRequested):
                        if event.request.arguments == {"order": "1"}:
                            shop.slow_go.set()  # c2 fails its check: v2 replaces c1
                            continue
                        listed = await running.pending_approvals(event.run_id)
                        assert [r.request_id for r in listed] == [event.request.request_id]
                        shop.hold.set()  # t2 ends: the top run pauses
        last = seen[-1]
        assert isinstance(last, RunCompleted)
        paused = last.result
        stale, fresh = (e.request for e in seen if isinstance(e, ApprovalRequested))
        (withdrawn,) = (e for e in seen if isinstance(e, ApprovalResolved))
        t2 = next(e for e in seen if isinstance(e, StepCompleted) and e.step_id == "t2")
        assert seen.index(withdrawn) < seen.index(t2)  # while the top run's t2 still worked
        assert (withdrawn.request_id, withdrawn.decision) == (stale.request_id, "deny")
        assert withdrawn.reason.startswith("withdrawn: step c1 of plan v1 of team 'shop'")
        assert [r.request_id for r in paused.pending_approvals] == [fresh.request_id]
        assert paused.answer == "paused: 1 approval pending"
        journal = await open_journal(journal_path)  # as another process reads it
        try:
            journaled = await journal.pending_approvals(paused.run_id)
        finally:
            await journal.close()
        assert [r.approval_id for r in journaled] == [fresh.request_id]
        with pytest.raises(ApprovalError, match="withdrawn: step c1"):
            await running.approve(stale.request_id, Approve())
        await running.approve(fresh.request_id, Approve())
        shop.go.set()
        with anyio.fail_after(10):
            done = await running.resume(paused.run_id)
    assert done.status == "completed", done.answer
    assert shop.log == ["start 2", "end 2"]  # order 1's refund never ran


async def test_a_decision_recorded_as_its_step_is_withdrawn_still_reaches_the_run() -> None:
    """A human's decision is being recorded when a replan cuts the request's step: the
    withdrawal leaves the request to it, and its run must still hear of the decision
    (no call will come to wait on it and tell), or it would list the request as pending."""
    desk = ApprovalDesk()
    notices: list[Notice] = []

    async def notify(notice: Notice) -> None:
        notices.append(notice)

    desk.open_run("run-1", notify)
    request = ApprovalRequest(
        tool_name="refund", call_id="c1", arguments={}, request_id="apr-1", run_id="run-1"
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(desk.wait, request, None, StepAt("run-1", 1, "s1"))
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()  # the replan cuts the step
    assert desk.claim("apr-1", Approve()) is True  # a human's decision, being recorded
    assert desk.withdraw("apr-1", Deny(reason="withdrawn: cut")) is None
    await desk.settle("apr-1", Approve(), "ana", journaled=True)
    assert isinstance(notices[-1], ApprovalSettled)
    assert (notices[-1].decision, notices[-1].by) == (Approve(), "ana")
    assert desk.pending("run-1") == ()
