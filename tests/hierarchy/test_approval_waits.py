"""While a call waits for a human, the run's wall-clock budget stands still; and the
in-process approver gets the same request a pending approval has.

The waits here are longer than the run's whole ``wall_clock`` budget (or the step's
``step_timeout``) on purpose, and a run whose clock kept going would end ``partial`` (or
its step ``timed_out``). A human's wait is a skip of the test's clock past the budget
(tests/jump_clock.py): the budget is never reached in real time, and no test waits it
out (it does not wait *for* anything by sleeping either; every hand-off is an event).
"""

from __future__ import annotations

import dataclasses
import threading

import anyio
import pytest

from regiment.errors import StepFailed
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Budget,
    RunCompleted,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse
from regiment.tools import ApprovalDecision, ApprovalRequest, Approve, Toolset

from ..jump_clock import NEVER, skip
from .approval_team import Shop, nested_team, plan_json, shop_team, step

pytestmark = [pytest.mark.anyio, pytest.mark.jump_clock]

BUDGET = NEVER  # seconds of the run's own time: never reached in real time
WAIT = BUDGET + 1  # seconds a human takes (a skip of the clock): more than the whole budget


def _budgeted(team: Team) -> Team:
    return dataclasses.replace(team, budget=Budget(wall_clock=BUDGET, on_exhausted="raise"))


def _with_approver(team: Team, approver: object) -> Team:
    """``team`` with its billing worker's tool set answering approvals in process."""
    workers = []
    for worker in team.workers:
        if isinstance(worker, Worker) and worker.name == "billing":
            tools = Toolset("billing", worker.toolset.tools, approver=approver)  # type: ignore[arg-type]
            worker = dataclasses.replace(worker, tools=tools)
        workers.append(worker)
    return dataclasses.replace(team, workers=workers)


async def test_a_live_wait_on_the_desk_does_not_spend_the_wall_clock_budget() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 88213 40"), step("s2", "slow", "slow work"))
    team = _budgeted(shop_team(shop, plan))
    async with team.start() as running, running.stream("refund") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                await skip(WAIT)  # the human reads the request: longer than the budget
                await running.approve(event.request.request_id, Approve(), by="ana")
            if isinstance(event, ApprovalResolved):
                shop.release.set()  # the slow step was held all along (no clock held for it)
            if isinstance(event, RunCompleted):
                result = event.result
    assert result.status == "completed"
    assert result.budget_exhausted is None
    assert shop.refunds == [("88213", 40)]


async def test_an_in_process_approver_gets_the_pending_request_fields_and_holds_the_clock() -> None:
    shop = Shop()
    asked: list[ApprovalRequest] = []
    waiting, decided = anyio.Event(), anyio.Event()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        waiting.set()
        await decided.wait()
        return Approve()

    plan = plan_json(step("s1", "billing", "refund 88213 40"))
    team = _budgeted(_with_approver(shop_team(shop, plan), approver))
    async with team.start() as running, anyio.create_task_group() as tg:

        async def human() -> None:
            await waiting.wait()
            await skip(WAIT)  # longer than the run's whole budget
            decided.set()

        tg.start_soon(human)
        result = await running.run("refund order 88213")
    assert result.status == "completed"
    assert shop.refunds == [("88213", 40)]
    (request,) = asked
    assert request.request_id.startswith("apr-")
    assert request.run_id == result.run_id
    assert request.worker == "shop/billing"
    assert (request.plan_version, request.step_id, request.call_index) == (1, "s1", 0)
    assert (request.tool_name, request.arguments) == (
        "issue_refund",
        {"order_id": "88213", "amount": 40},
    )
    assert request.idempotency_key == "issue_refund:order_id=88213"
    assert request.expires_at is None  # approval_timeout is the desk's, not the approver's


async def test_the_approver_request_id_is_the_one_a_pending_request_would_have() -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return Approve()

    plan = plan_json(step("s1", "billing", "refund 88213 40"))
    async with shop_team(Shop(), plan).start() as running:
        paused = await running.run("refund")
    (pending,) = paused.pending_approvals
    async with _with_approver(shop_team(Shop(), plan), approver).start() as running:
        done = await running.run("refund")
    (request,) = asked
    assert done.status == "completed"
    same = ("worker", "plan_version", "step_id", "call_index", "tool_name", "arguments")
    assert [getattr(request, f) for f in same] == [getattr(pending, f) for f in same]
    assert request.request_id != pending.request_id  # the id is per run: other run ids


async def test_a_nested_team_wait_holds_the_top_run_clock() -> None:
    shop = Shop()
    top = nested_team(
        shop, plan_json(step("t1", "desk", "refund via the shop"), step("t2", "slow", "slow"))
    )
    team = _budgeted(top)
    async with team.start() as running, running.stream("refund") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                assert event.request.worker == "top/desk/shop/billing"
                await skip(WAIT)
                await running.approve(event.request.request_id, Approve())
            if isinstance(event, ApprovalResolved):
                shop.release.set()
            if isinstance(event, RunCompleted):
                result = event.result
    assert result.status == "completed"
    assert shop.refunds == [("5", 30)]


async def test_a_decision_reaches_the_planner_before_a_step_that_ends_right_after_it() -> None:
    """Approve, then at once let the only other step finish: the run must not take the
    decided request for a pending one and pause (no journal here)."""
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))
    for _ in range(5):  # the race went the wrong way about half the time
        shop.release = type(shop.release)()
        async with shop_team(shop, plan).start() as running, running.stream("refund") as events:
            async for event in events:
                if isinstance(event, ApprovalRequested):
                    await running.approve(event.request.request_id, Approve())
                    shop.release.set()  # s2 ends now, maybe before the refund's step goes on
                last = event
        assert isinstance(last, RunCompleted)
        assert last.result.status == "completed", last.result.answer
    assert shop.refunds == [("1", 40)] * 5


STEP_TIMEOUT = NEVER  # seconds a billing step may take: never reached in real time
LONG_WAIT = STEP_TIMEOUT + 1  # seconds a human takes here: more than the step's whole timeout


def _timed(team: Team) -> Team:
    """``team`` whose billing steps time out after ``STEP_TIMEOUT``."""
    workers = [
        dataclasses.replace(w, step_timeout=STEP_TIMEOUT)
        if isinstance(w, Worker) and w.name == "billing"
        else w
        for w in team.workers
    ]
    return dataclasses.replace(team, workers=workers)


async def test_an_approver_that_takes_its_time_does_not_time_its_step_out() -> None:
    """A person answering `--approve ask` for longer than the step's timeout: the wait
    is not the step being slow (the run does not pause for it either: it waits)."""
    shop = Shop()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        await skip(LONG_WAIT)
        return Approve()

    plan = plan_json(step("s1", "billing", "refund 88213 40"))
    team = _timed(_with_approver(shop_team(shop, plan), approver))
    async with team.start() as running:
        result = await running.run("refund order 88213")
    assert result.status == "completed", result.answer
    assert [r.status for r in result.steps] == ["done"]
    assert shop.refunds == [("88213", 40)]


async def test_a_wait_on_the_desk_while_another_step_works_does_not_time_its_step_out() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 88213 40"), step("s2", "slow", "slow work"))
    team = _timed(shop_team(shop, plan))
    async with team.start() as running, running.stream("refund") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                await skip(LONG_WAIT)  # the slow step keeps the run going meanwhile
                await running.approve(event.request.request_id, Approve(), by="ana")
            if isinstance(event, ApprovalResolved):
                shop.release.set()
            if isinstance(event, RunCompleted):
                result = event.result
    assert result.status == "completed", result.answer
    assert {r.step_id: r.status for r in result.steps} == {"s1": "done", "s2": "done"}
    assert shop.refunds == [("88213", 40)]


async def test_a_plain_function_approver_runs_off_the_event_loop() -> None:
    """A sync approver (one that blocks on a person, say) runs in a worker thread: here
    it waits for a slow step of the same run to finish, which it could never do if it
    held the event loop. Its decision counts like an async one's."""
    shop = Shop()
    slow_done = threading.Event()

    def approver(request: ApprovalRequest) -> ApprovalDecision:
        assert slow_done.wait(10), "the slow step never finished: the loop was held"
        return Approve()

    shop_work = shop.work

    async def work(request: ModelRequest) -> ModelResponse | str:
        answer = await shop_work(request)
        if shop.slow_done:
            slow_done.set()
        return answer

    shop.work = work  # type: ignore[method-assign]  # (this shop's slow step tells the thread)
    plan = plan_json(step("s1", "billing", "refund 88213 40"), step("s2", "slow", "slow work"))
    team = _with_approver(shop_team(shop, plan), approver)
    shop.release.set()
    with anyio.fail_after(20):
        async with team.start() as running:
            result = await running.run("refund order 88213")
    assert result.status == "completed", result.answer
    assert shop.refunds == [("88213", 40)]
    assert shop.slow_done == ["slow work"]


async def test_an_approver_that_answers_no_decision_fails_its_step_saying_so() -> None:
    shop = Shop()

    async def approver(request: ApprovalRequest) -> object:
        return True

    plan = plan_json(step("s1", "billing", "refund 88213 40"))
    team = _with_approver(shop_team(shop, plan), approver)
    team = dataclasses.replace(team, budget=Budget(replans=0))
    async with team.start() as running:
        with pytest.raises(StepFailed) as failed:
            await running.run("refund order 88213")
    assert "the approver of tool 'issue_refund' returned the bool True, not a decision" in str(
        failed.value
    )
    assert shop.refunds == []
