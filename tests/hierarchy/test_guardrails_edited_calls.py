"""A person's edit of a call that needs approval meets the call's ``tool_call`` guards.

The guards judged the model's call before it asked for approval; an ``EditArguments``
then ran the tool with arguments no guard had seen: a guard that refuses refunds over
100 let an edit to 500 through, live and on a resume. The edited arguments are now
judged by the same guards before the tool runs: a ``tell_model`` trip denies the call
with the guard's reason, a ``fail_step`` trip fails the step, a rewrite is what runs,
and arguments they pass run as edited.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from regiment._json import JsonObject
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    GuardrailRewrote,
    GuardrailTripped,
    Pass,
    Rewrite,
    StepErrored,
    Team,
    ToolCallSubject,
    Trip,
    Worker,
    guardrail,
)
from regiment.hierarchy.guard import OnTrip
from regiment.tools import EditArguments

from .approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

EDITED: JsonObject = {"order_id": "1", "amount": 500}


def _capped(shop: Shop, on_trip: OnTrip, *plans: str) -> tuple[Team, list[dict[str, object]]]:
    """The shop, its refunds judged by a guard that refuses more than 100 (``seen``: the
    arguments it judged) and rewrites order ``9`` to ``1``."""
    seen: list[dict[str, object]] = []

    def cap(call: ToolCallSubject) -> Pass | Trip | Rewrite[ToolCallSubject]:
        seen.append(dict(call.arguments))
        if int(str(call.arguments["amount"])) > 100:
            return Trip("over 100")
        if call.arguments["order_id"] == "9":
            return Rewrite(dataclasses.replace(call, arguments={**call.arguments, "order_id": "1"}))
        return Pass()

    team = shop_team(shop, *plans)
    assert isinstance(team.workers[0], Worker)
    billing = dataclasses.replace(
        team.workers[0],
        tool_guardrails={"issue_refund": [guardrail("tool_call", on_trip=on_trip)(cap)]},
    )
    return dataclasses.replace(team, workers=[billing, team.workers[1]]), seen


async def _edit_live(team: Team, shop: Shop, edit: JsonObject) -> list[object]:
    events: list[object] = []
    async with team.start() as running, running.stream("refund") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ApprovalRequested):
                await running.approve(event.request.request_id, EditArguments(arguments=edit))
            elif isinstance(event, ApprovalResolved):
                shop.release.set()
    return events


async def test_an_edit_a_tell_model_guard_refuses_is_denied_with_its_reason() -> None:
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))
    team, seen = _capped(shop, "tell_model", plan)
    events = await _edit_live(team, shop, EDITED)
    assert shop.refunds == []
    assert seen == [{"order_id": "1", "amount": 40}, EDITED]
    assert shop.seen == [
        "denied: the edited arguments: not run: guardrail 'cap' refused this call: over 100"
    ]
    assert [e.reason for e in events if isinstance(e, GuardrailTripped)] == ["over 100"]


async def test_an_edit_a_guard_rewrites_runs_as_rewritten_and_one_it_passes_as_edited() -> None:
    shop = Shop()
    plan = plan_json(
        step("s1", "billing", "refund 1 40"),
        step("s2", "billing", "refund 2 30"),
        step("s3", "slow", "slow"),
    )
    team, seen = _capped(shop, "tell_model", plan)
    edits: dict[str, JsonObject] = {
        "1": {"order_id": "9", "amount": 60},
        "2": {"order_id": "2", "amount": 70},
    }
    rewrote: list[str] = []
    async with team.start() as running, running.stream("refund") as stream:
        resolved = 0
        async for event in stream:
            if isinstance(event, ApprovalRequested):
                edit = edits[str(event.request.arguments["order_id"])]
                await running.approve(event.request.request_id, EditArguments(arguments=edit))
            elif isinstance(event, ApprovalResolved):
                resolved += 1
                if resolved == 2:
                    shop.release.set()
            elif isinstance(event, GuardrailRewrote):
                rewrote.append(event.guardrail)
    assert sorted(shop.refunds) == [("1", 60), ("2", 70)]  # order 9 rewritten to 1
    assert {"order_id": "9", "amount": 60} in seen
    assert {"order_id": "2", "amount": 70} in seen
    assert rewrote == ["cap"]


async def test_an_edit_a_fail_step_guard_refuses_fails_the_step_and_never_runs() -> None:
    shop = Shop()
    first = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))
    after = plan_json(step("s3", "slow", "slow again"))
    team, seen = _capped(shop, "fail_step", first, after)
    events = await _edit_live(team, shop, EDITED)
    assert shop.refunds == []
    assert seen == [{"order_id": "1", "amount": 40}, EDITED]
    failed = [e for e in events if isinstance(e, StepErrored)]
    assert [(e.step_id, e.status) for e in failed] == [("s1", "failed")]
    assert "guardrail 'cap' tripped on the tool call: over 100" in failed[0].error


async def test_an_edit_decided_while_paused_meets_the_guards_on_resume(tmp_path: Path) -> None:
    shop = Shop()
    team, seen = _capped(shop, "tell_model", plan_json(step("s1", "billing", "refund 1 40")))
    async with team.start(journal=str(tmp_path / "runs.db")) as running:
        paused = await running.run("refund")
        (request,) = paused.pending_approvals
        await running.approve(request.request_id, EditArguments(arguments=EDITED))
        resumed = await running.resume(paused.run_id)
    assert resumed.status == "completed"
    assert shop.refunds == []
    assert seen == [{"order_id": "1", "amount": 40}, EDITED]
    assert shop.seen == [
        "denied: the edited arguments: not run: guardrail 'cap' refused this call: over 100"
    ]
