"""A run that pauses for a decision: every span its pause cut reads as waiting for one,
down through nested teams, never as cancelled (decoded from real OTLP); the resume goes
on from there. A real cancel of a waiting call still reads cancelled."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from regiment import Approve
from regiment.hierarchy import ApprovalRequested, Team
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import tool

from ..hierarchy.approval_team import Shop, nested_team, plan_json, step
from .otlp_receiver import OtlpReceiver, ReceivedSpan
from .test_cancelled_spans import Answer, _calls, _team, _traced

pytestmark = pytest.mark.anyio


def _reads_waiting(span: ReceivedSpan) -> bool:
    """No cancelled marker, no error: the span's work waits for a decision."""
    return (
        "regiment.cancelled" not in span.attributes
        and "error.type" not in span.attributes
        and span.status_code == 0
        and [name for name, _ in span.events if name != "regiment.approval.requested"] == []
    )


def _one(spans: tuple[ReceivedSpan, ...], name: str) -> ReceivedSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


async def test_a_paused_runs_call_and_its_wait_read_awaiting_a_decision() -> None:
    # Both read `regiment.cancelled=true` beside `regiment.tool.outcome=awaiting_approval`:
    # a pause read as if the payment had been called off.
    @tool(requires_approval=True)
    def pay(x: str) -> str:
        """Pay."""
        return x

    async def go(team: Team) -> None:
        assert (await team.run("go")).status == "paused"

    roles: dict[str, Answer] = {"worker": _calls("pay")}
    spans = await _traced(lambda t: _team(t, roles, tools=[pay]), go)
    assert all(_reads_waiting(s) for s in spans), spans
    call = _one(spans, "execute_tool pay")
    assert call.attributes["regiment.tool.outcome"] == "awaiting_approval"
    wait = _one(spans, "regiment.approval")
    assert "regiment.approval.decision" not in wait.attributes  # none was made yet
    assert isinstance(wait.attributes["regiment.approval.wait_s"], float)


def _traced_nested(spans: tuple[ReceivedSpan, ...]) -> dict[str, ReceivedSpan]:
    names = ("invoke_agent top", "invoke_agent desk", "invoke_agent shop")
    return {name: _one(spans, name) for name in (*names, "invoke_agent billing")}


async def test_a_pause_inside_a_nested_team_reads_paused_all_the_way_down(tmp_path: Path) -> None:
    # Only the top run and its team-worker step read paused: the nested run's root span,
    # its step and the call read cancelled, and the nested run ended `cancelled`.
    shop = Shop()
    plan = plan_json(step("s1", "desk", "handle the refund"))
    with OtlpReceiver() as receiver:
        handle = configure_tracing("pause", endpoint=receiver.endpoint, set_global=False)
        again = plan_json(step("c1", "billing", "refund 5 30"))
        team = nested_team(shop, plan, child_plans=(again,), telemetry=Telemetry(handle.provider))
        async with team.start(journal=tmp_path / "runs.db") as running:
            paused = await running.run("refund via desk")
            assert paused.status == "paused"
            handle.force_flush()
            before = receiver.spans()
            (request,) = paused.pending_approvals
            await running.approve(request.request_id, Approve(), by="ana")
            resumed = await running.resume(paused.run_id)
        handle.shutdown()
        after = receiver.spans()[len(before) :]
    assert all(_reads_waiting(s) for s in before), before
    spans = _traced_nested(before)
    assert spans["invoke_agent top"].attributes["regiment.run.status"] == "paused"
    assert spans["invoke_agent shop"].attributes["regiment.run.status"] == "paused"
    for step_span in ("invoke_agent desk", "invoke_agent billing"):
        assert spans[step_span].attributes["regiment.step.outcome"] == "awaiting_approval"
    call = _one(before, "execute_tool issue_refund")
    assert call.attributes["regiment.tool.outcome"] == "awaiting_approval"
    # The resume runs the refund once, with the decision, and its trace reads done.
    assert resumed.status == "completed"
    assert shop.refunds == [("5", 30)]
    assert not [s for s in after if "regiment.cancelled" in s.attributes]
    spans = _traced_nested(after)
    assert spans["invoke_agent shop"].attributes["regiment.run.status"] == "completed"
    assert spans["invoke_agent billing"].attributes["regiment.step.outcome"] == "done"
    assert _one(after, "execute_tool issue_refund").attributes["regiment.tool.outcome"] == "ok"
    decided = _one(after, "regiment.approval").attributes["regiment.approval.decision"]
    assert decided == "approve"


async def test_a_nested_wait_the_caller_cancels_still_reads_cancelled() -> None:
    # Not a pause: the top run goes on with its `slow` step when the caller leaves.
    shop = Shop()
    plan = plan_json(step("s1", "desk", "handle the refund"), step("s2", "slow", "slow"))

    async def go(team: Team) -> None:
        async with team.start() as running, running.stream("refund via desk") as events:
            async for event in events:
                if isinstance(event, ApprovalRequested):
                    break

    spans = await _traced(lambda t: nested_team(shop, plan, telemetry=t), go)
    cut = {s.name for s in spans if s.attributes.get("regiment.cancelled")}
    assert {"execute_tool issue_refund", "regiment.approval", "invoke_agent billing"} <= cut
    assert {"invoke_agent shop", "invoke_agent desk"} <= cut
    for root in ("invoke_agent shop", "invoke_agent top"):
        assert _one(spans, root).attributes["regiment.run.status"] == "cancelled"


async def test_a_nested_step_that_works_while_its_sibling_waits_is_not_cut() -> None:
    # The nested run's `slow` step waited for no decision: the run pauses only once it
    # is done (a pause then would have cut it, and a resume done it again).
    shop = Shop()
    both = plan_json(step("c1", "billing", "refund 5 30"), step("c2", "slow", "slow"))
    plan = plan_json(step("s1", "desk", "handle the refund"))

    async def go(team: Team) -> None:
        async def release() -> None:
            await anyio.wait_all_tasks_blocked()  # c1 waits for a decision, c2 still works
            shop.release.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(release)
            assert (await team.run("refund via desk")).status == "paused"

    def build(telemetry: Telemetry) -> Team:
        return nested_team(shop, plan, telemetry=telemetry, child_first=both)

    spans = await _traced(build, go)
    outcomes = {
        s.name: s.attributes["regiment.step.outcome"]
        for s in spans
        if "regiment.step.outcome" in s.attributes
    }
    assert outcomes == {
        "invoke_agent desk": "awaiting_approval",
        "invoke_agent billing": "awaiting_approval",
        "invoke_agent slow": "done",
    }
    assert shop.slow_done == ["slow"]
    assert _reads_waiting(_one(spans, "invoke_agent billing"))
