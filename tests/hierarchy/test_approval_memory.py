"""A long-lived team forgets the approval requests of runs that ended: decided ones
always, undecided ones when a journal keeps them, and otherwise all but those of the
latest ended runs (a bounded number)."""

from __future__ import annotations

import gc
from pathlib import Path

import anyio
import pytest

from regiment.errors import ApprovalError
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Planner,
    RunCompleted,
    Team,
    Worker,
)
from regiment.hierarchy._approval_entries import Entries, Pending
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.tools import ApprovalRequest, Approve, tool

pytestmark = pytest.mark.anyio


@tool(requires_approval=True)
def pay(order: str) -> str:
    """Pay an order."""
    return f"paid {order}"


class _Gate:
    """Holds the ``slow`` worker's step (so the run stays live) until released."""

    event = anyio.Event()


_PLAN = (
    '{"steps": [{"id": "s1", "description": "pay the order", "worker": "billing"},'
    ' {"id": "s2", "description": "wait", "worker": "slow"}]}'
)

_ALONE = '{"steps": [{"id": "s1", "description": "pay the order", "worker": "billing"}]}'


async def _brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":  # "alone": a plan of the one step that waits for approval
        return _PLAN if "alone" not in request.messages[0].text else _ALONE
    if request.role == "worker" and "Your step (s2)" in request.messages[0].text:
        await _Gate.event.wait()
        return "waited"
    if request.role == "worker":
        done = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        return text_response("done") if done else tool_call_response("pay", {"order": "7"})
    return "answer"


def _team() -> Team:
    model = ScriptedModel(_brain)
    billing = Worker(name="billing", description="pays", model=model, tools=[pay])
    slow = Worker(name="slow", description="waits", model=model)
    return Team(name="shop", planner=Planner(model=model), workers=[billing, slow])


def _requests_alive() -> int:
    gc.collect()
    return sum(isinstance(o, ApprovalRequest) for o in gc.get_objects())


async def test_requests_decided_live_are_forgotten_when_their_runs_end() -> None:
    team = _team()
    before = _requests_alive()
    async with team.start() as running:
        for _ in range(25):
            _Gate.event = anyio.Event()
            async with running.stream("pay order 7") as events:
                async for event in events:
                    if isinstance(event, ApprovalRequested):
                        await running.approve(event.request.request_id, Approve(), by="ana")
                    elif isinstance(event, ApprovalResolved):
                        _Gate.event.set()
                    elif isinstance(event, RunCompleted):
                        assert event.result.status == "completed"
            del event, events  # the last stream keeps its run's ending (events.ending)
        assert _requests_alive() == before  # the old desk held all 25
        assert await running.pending_approvals() == ()


async def test_journaled_paused_runs_leave_their_requests_to_the_journal(tmp_path: Path) -> None:
    team = _team()
    before = _requests_alive()
    async with team.start(journal=str(tmp_path / "runs.db")) as running:
        run_ids = []
        for _ in range(10):
            result = await running.run("pay order 7 alone")
            assert result.status == "paused"
            run_ids.append(result.run_id)
        del result
        assert _requests_alive() == before
        pending = await running.pending_approvals()  # read back from the journal
        assert sorted(r.run_id for r in pending) == sorted(run_ids)


async def test_unjournaled_paused_runs_keep_the_requests_of_the_latest_runs_only() -> None:
    entries = Entries(keep=3)
    for n in range(5):
        request = ApprovalRequest(
            request_id=f"apr-{n}",
            run_id=f"run-{n}",
            worker="shop/billing",
            plan_version=1,
            step_id="s1",
            tool_name="pay",
            call_id=f"call-{n}",
            arguments={"order": "7"},
        )
        entries.add(Pending(request, None))
        entries.end_run(f"run-{n}", keep_undecided=True)
    assert [e.request.run_id for e in entries.values()] == ["run-2", "run-3", "run-4"]
    entries.end_run("run-4", keep_undecided=False)
    assert len(entries) == 2


async def test_an_unjournaled_cancelled_run_leaves_no_request_pending() -> None:
    """Without a journal a paused run's requests stay listed (for ``approve`` to say why
    it cannot go on), but a cancelled run's can never apply: they go with it. They were
    listed as pending, and deciding one said its run "has paused"."""
    team = _team()
    async with team.start() as running:
        _Gate.event = anyio.Event()  # s2 works: the run does not pause
        async with running.stream("pay order 7") as events:
            async for event in events:
                if isinstance(event, ApprovalRequested):
                    request = event.request
                    break  # the caller leaves: the run is cancelled
        assert await running.pending_approvals() == ()
        with pytest.raises(ApprovalError) as refused:
            await running.approve(request.request_id, Approve())
        assert refused.value.kind == "unknown"
        paused = await running.run("pay order 7 alone")
        assert paused.status == "paused"
        (kept,) = await running.pending_approvals()
        assert kept.run_id == paused.run_id
