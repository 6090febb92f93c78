"""Approvals in one process: a call waits for a decision, the run pauses when
nothing else can go on, and a decision made while the run is live goes on at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ApprovalError, ConfigError, StepFailed
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Budget,
    Event,
    Planner,
    RunCompleted,
    RunningTeam,
    Team,
    Worker,
)
from regiment.models import ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Approver,
    Deny,
    EditArguments,
    Toolset,
    tool,
)

from .approval_team import Shop, nested_team, plan_json, shop_team, step
from .brains import Brain

pytestmark = pytest.mark.anyio

Decide = Callable[[RunningTeam, ApprovalRequested], object]


async def _drive(
    team: Team, shop: Shop, goal: str, decide: Callable[[ApprovalRequested], object]
) -> tuple[list[Event], RunningTeam]:
    """Stream a run; on each request, let ``decide`` answer (awaitable) or not; release
    the ``slow`` step once as many requests were resolved as were asked."""
    seen: list[Event] = []
    async with team.start() as running, running.stream(goal) as events:
        asked = resolved = 0
        async for event in events:
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                asked += 1
                outcome = decide(event)
                if outcome is not None:
                    await running.approve(event.request.request_id, outcome, by="ana")  # type: ignore[arg-type]
            elif isinstance(event, ApprovalResolved):
                resolved += 1
                if resolved == asked:
                    shop.release.set()
    return seen, running


def _result(seen: list[Event]) -> RunCompleted:
    last = seen[-1]
    assert isinstance(last, RunCompleted), last
    return last


async def test_a_call_needing_approval_pauses_the_run_when_nothing_else_can_go_on() -> None:
    shop = Shop()
    team = shop_team(shop, plan_json(step("s1", "billing", "refund 88213 40")))
    async with team.start() as running:
        result = await running.run("refund order 88213")
        assert result.status == "paused"
        assert result.answer == "paused: 1 approval pending"
        (request,) = result.pending_approvals
        assert request.request_id.startswith("apr-")
        assert request.run_id == result.run_id
        assert request.worker == "shop/billing"
        assert (request.plan_version, request.step_id, request.call_index) == (1, "s1", 0)
        assert request.tool_name == "issue_refund"
        assert request.arguments == {"order_id": "88213", "amount": 40}
        assert request.idempotency_key == "issue_refund:order_id=88213"
        assert shop.refunds == []  # the body never ran
        asked = [e for e in result.events if isinstance(e, ApprovalRequested)]
        assert [e.request for e in asked] == [request]
        assert await running.pending_approvals() == (request,)
        assert await running.pending_approvals(result.run_id) == (request,)
        with pytest.raises(ApprovalError, match="no journal"):
            await running.approve(request.request_id, Approve())
    assert shop.refunds == []


async def test_a_live_denial_gives_the_worker_an_error_and_the_body_never_runs() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 88213 40"), step("s2", "slow", "slow work"))
    seen, _ = await _drive(
        shop_team(shop, plan), shop, "refund", lambda e: Deny(reason="over the limit")
    )
    result = _result(seen).result
    assert result.status == "completed"
    assert shop.refunds == []
    assert shop.seen == ["denied: over the limit"]
    (resolved,) = [e for e in seen if isinstance(e, ApprovalResolved)]
    assert (resolved.decision, resolved.decided_by, resolved.reason) == (
        "deny",
        "ana",
        "over the limit",
    )
    assert (resolved.tool, resolved.step_id) == ("issue_refund", "s1")
    assert result.pending_approvals == ()


async def test_approve_runs_the_tool_once_and_edit_runs_it_with_the_edited_arguments() -> None:
    shop = Shop()
    plan = plan_json(
        step("s1", "billing", "refund 1 40"),
        step("s2", "billing", "refund 2 500"),
        step("s3", "slow", "slow work"),
    )

    def decide(event: ApprovalRequested) -> object:
        if event.request.arguments["order_id"] == "1":
            return Approve()
        return EditArguments(arguments={"order_id": "2", "amount": 100}, reason="cap")

    seen, _ = await _drive(shop_team(shop, plan), shop, "two refunds", decide)
    assert _result(seen).result.status == "completed"
    assert sorted(shop.refunds) == [("1", 40), ("2", 100)]  # each ran once, the edit as edited
    resolved = {e.arguments["order_id"]: e for e in seen if isinstance(e, ApprovalResolved)}
    assert (resolved["2"].decision, resolved["2"].arguments["amount"]) == ("edit", 100)
    assert resolved["1"].decision == "approve"
    requests = {e.request.request_id for e in seen if isinstance(e, ApprovalRequested)}
    assert len(requests) == 2  # two parallel steps, two requests


async def test_invalid_edits_and_second_decisions_are_refused_and_the_request_stays() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 7 40"), step("s2", "slow", "slow"))
    team = shop_team(shop, plan)
    errors: list[str] = []
    async with team.start() as running, running.stream("refund") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                rid = event.request.request_id
                bad = EditArguments(arguments={"order_id": "7", "amount": "lots"})
                with pytest.raises(ApprovalError) as bad_edit:
                    await running.approve(rid, bad)
                errors.append(str(bad_edit.value))
                assert [r.request_id for r in await running.pending_approvals()] == [rid]
                await running.approve(rid, Approve(), by="bo")
                with pytest.raises(ApprovalError) as twice:
                    await running.approve(rid, Deny(reason="changed my mind"))
                errors.append(str(twice.value))
                with pytest.raises(ApprovalError, match="no approval request 'apr-nope'"):
                    await running.approve("apr-nope", Approve())
            elif isinstance(event, ApprovalResolved):
                shop.release.set()
    assert "amount" in errors[0]
    assert "stays pending" in errors[0]
    assert "already decided by bo" in errors[1]
    assert shop.refunds == [("7", 40)]


async def test_a_request_nobody_answers_expires_as_a_denial() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 9 40"), step("s2", "slow", "slow"))
    team = shop_team(shop, plan, approval_timeout=0.05)
    seen, _ = await _drive(team, shop, "refund", lambda e: None)
    (resolved,) = [e for e in seen if isinstance(e, ApprovalResolved)]
    assert (resolved.decision, resolved.decided_by) == ("deny", "timeout")
    assert shop.seen == ["denied: no decision before the request expired"]
    assert shop.refunds == []
    (asked,) = [e for e in seen if isinstance(e, ApprovalRequested)]
    assert asked.request.expires_at is not None


async def test_a_predicate_decides_which_calls_need_approval() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "credit 3 50"), step("s2", "billing", "credit 4 500"))
    async with shop_team(shop, plan).start() as running:
        result = await running.run("credits")
    assert result.status == "paused"
    assert shop.refunds == [("credit:3", 50)]  # at 50 no approval was needed
    assert [r.arguments for r in result.pending_approvals] == [{"order_id": "4", "amount": 500}]


async def test_a_nested_team_request_surfaces_at_the_top_with_its_path() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "desk", "handle the refund"), step("s2", "slow", "slow"))
    seen, _ = await _drive(nested_team(shop, plan), shop, "refund via desk", lambda e: Approve())
    result = _result(seen).result
    (asked,) = [e for e in seen if isinstance(e, ApprovalRequested)]
    request = asked.request
    assert request.run_id == result.run_id  # the top run, not the nested one
    assert request.worker == "top/desk/shop/billing"
    assert (request.plan_version, request.step_id) == (1, "s1")
    assert result.status == "completed"
    assert shop.refunds == [("5", 30)]


async def test_a_nested_request_pauses_the_top_run() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "desk", "handle the refund"))
    async with nested_team(shop, plan).start() as running:
        result = await running.run("refund via desk")
    assert result.status == "paused"
    (request,) = result.pending_approvals
    assert (request.worker, request.step_id) == ("top/desk/shop/billing", "s1")
    assert shop.refunds == []


async def test_the_wait_for_a_decision_is_a_regiment_approval_span() -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 8 40"), step("s2", "slow", "slow"))
    team = shop_team(shop, plan, telemetry=Telemetry(provider))
    seen, _ = await _drive(team, shop, "refund", lambda e: Deny(reason="no"))
    (span,) = [s for s in collector.spans() if s.name == "regiment.approval"]
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.tool.name"] == "issue_refund"
    assert attributes["regiment.approval.decision"] == "deny"
    assert attributes["regiment.worker"] == "shop/billing"
    (asked,) = [e for e in seen if isinstance(e, ApprovalRequested)]
    assert attributes["regiment.approval.request_id"] == asked.request.request_id
    wait = attributes["regiment.approval.wait_s"]
    assert isinstance(wait, float)
    assert wait >= 0
    (tool_span,) = [s for s in collector.spans() if s.name == "execute_tool issue_refund"]
    assert span.parent is not None
    assert span.parent.span_id == tool_span.context.span_id  # the wait is inside the call
    assert _result(seen).result.trace_id == format(span.context.trace_id, "032x")


def test_a_worker_cannot_require_approval_for_a_tool_it_lacks() -> None:
    @tool
    def lookup(key: str) -> str:
        """Look up."""
        return key

    with pytest.raises(ConfigError, match=r"worker 'w': require_approval: .*no tool 'refund'"):
        Worker(
            name="w",
            description="Looks things up.",
            model=ScriptedModel([]),
            tools=[lookup],
            require_approval=["refund"],
        )
    worker = Worker(
        name="w",
        description="Looks things up.",
        model=ScriptedModel([]),
        tools=[lookup],
        require_approval=["lookup"],
    )
    assert worker.toolset.get("lookup") is not None
    assert worker.toolset.get("lookup").requires_approval  # type: ignore[union-attr]
    assert not lookup.requires_approval  # the original tool is unchanged


async def test_an_in_process_approvers_wait_is_a_regiment_approval_span_too() -> None:
    """`--approve ask` is a person deciding too: the trace shows how long they took."""
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    shop = Shop()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return Deny(reason="not today")

    team = shop_team(shop, plan_json(step("s1", "billing", "refund 8 40")))
    (billing, slow) = team.workers
    assert isinstance(billing, Worker)
    tools = Toolset("billing", billing.toolset.tools, approver=approver)
    billing = dataclasses.replace(billing, tools=tools)
    team = dataclasses.replace(team, workers=[billing, slow], telemetry=Telemetry(provider))
    result = await team.run("refund")
    assert result.status == "completed"
    (span,) = [s for s in collector.spans() if s.name == "regiment.approval"]
    attributes = dict(span.attributes or {})
    assert attributes["regiment.approval.decision"] == "deny"
    assert attributes["regiment.worker"] == "shop/billing"
    assert isinstance(attributes["regiment.approval.wait_s"], float)
    (tool_span,) = [s for s in collector.spans() if s.name == "execute_tool issue_refund"]
    assert span.parent is not None
    assert span.parent.span_id == tool_span.context.span_id


async def _broken(request: ApprovalRequest) -> ApprovalDecision:
    raise ValueError("approval service is down")


async def _says_yes(request: ApprovalRequest) -> ApprovalDecision:
    return True  # type: ignore[return-value]


def _denies_with_none(request: ApprovalRequest) -> ApprovalDecision:
    return Deny(reason=None)  # type: ignore[arg-type]


def _edits_to_text(request: ApprovalRequest) -> ApprovalDecision:
    return EditArguments(arguments="7")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("approver", "said"),
    [
        (_broken, "raised ValueError: approval service is down"),
        (_says_yes, "returned the bool True, not a decision"),
        (  # it told the model "denied: None", and a resumed run journaled it unreadable
            _denies_with_none,
            "returned Deny(reason=None), which does not hold what it declares "
            "(Expected `str`, got `null` - at `$.reason`)",
        ),
        (
            _edits_to_text,
            "returned EditArguments(arguments='7', reason=''), which does not hold what it "
            "declares (Expected `object`, got `str` - at `$.arguments`)",
        ),
    ],
)
async def test_an_approver_that_fails_fails_the_step_naming_it(
    approver: Approver, said: str
) -> None:
    # It said "AssertionError: Expected code to be unreachable, but got: True", or only
    # "ValueError: approval service is down", naming neither the approver nor its tool.
    shop = Shop()
    tools = Toolset("billing", shop.tools(), approver=approver)
    plans = [plan_json(step("s1", "billing", "refund 7 5"))] * 2
    model = ScriptedModel(Brain(plans, work=lambda _d, _r, request: shop.work(request)))
    billing = Worker(name="billing", description="refunds", model=model, tools=tools)
    team = Team(
        name="shop", planner=Planner(model=model), workers=[billing], budget=Budget(replans=0)
    )
    async with team.start() as running:
        for goal in ("first", "second"):  # the started team serves the next run
            with pytest.raises(StepFailed) as caught:
                await running.run(goal)
            assert caught.value.cause == (
                f"step s1 (refund 7 5) ended failed: ApprovalError: the approver of tool "
                f"'issue_refund' {said}; an approver (Toolset(approver=...)) is a function "
                "(async, or plain: it runs in a thread) that returns Approve(), "
                "Deny(reason=...) or EditArguments(arguments=...), or raises to fail the step"
            )
    assert shop.refunds == []
