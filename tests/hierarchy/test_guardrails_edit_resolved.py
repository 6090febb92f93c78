"""The resolution of an edit says what ran after the call's ``tool_call`` guards.

A person's ``EditArguments`` meets the call's guards before the tool runs; the
``ApprovalResolved`` of the request recorded only the person's edit, and only a
``GuardrailRewrote`` or ``GuardrailTripped`` after it said that other arguments ran,
or none. The resolution of such an edit now comes once the guards have judged it:
``arguments`` stay the person's edit, ``guarded`` says what the guards made of it
(``rewritten``, with ``ran_arguments``; ``refused``, with ``guard_reason``), live, in
the journal, and on a resume.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import msgspec
import pytest

from regiment._json import JsonObject
from regiment.cli._view import describe
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    GuardrailRewrote,
    GuardrailTripped,
    Pass,
    RunCompleted,
    Team,
    ToolCallSubject,
    Worker,
    guardrail,
)
from regiment.journal import EventRecorded, open_journal
from regiment.tools import EditArguments

from .approval_team import Shop, plan_json, shop_team, step
from .test_guardrails_edited_calls import EDITED, _capped, _edit_live

pytestmark = pytest.mark.anyio


def _resolved(events: list[object]) -> list[ApprovalResolved]:
    return [e for e in events if isinstance(e, ApprovalResolved)]


@pytest.mark.parametrize("on_trip", ["tell_model", "fail_step"])
async def test_an_edit_the_guards_refuse_is_resolved_refused(on_trip: str) -> None:
    shop = Shop()
    plans = [plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))]
    if on_trip == "fail_step":
        plans.append(plan_json(step("s3", "slow", "slow again")))
    team, _ = _capped(shop, "tell_model" if on_trip == "tell_model" else "fail_step", *plans)
    events = await _edit_live(team, shop, EDITED)
    assert shop.refunds == []
    (resolved,) = _resolved(events)
    assert (resolved.decision, resolved.arguments) == ("edit", EDITED)  # the person's edit
    assert resolved.guarded == "refused"
    assert resolved.ran_arguments is None
    assert "guardrail 'cap'" in resolved.guard_reason
    assert resolved.guard_reason.endswith("over 100")
    assert [e.reason for e in events if isinstance(e, GuardrailTripped)] == ["over 100"]


async def test_an_edit_the_guards_rewrite_says_what_ran_and_one_they_pass_says_nothing() -> None:
    shop = Shop()
    plan = plan_json(
        step("s1", "billing", "refund 1 40"),
        step("s2", "billing", "refund 2 30"),
        step("s3", "slow", "slow"),
    )
    team, _ = _capped(shop, "tell_model", plan)
    edits: dict[str, JsonObject] = {
        "1": {"order_id": "9", "amount": 60},
        "2": {"order_id": "2", "amount": 70},
    }
    events: list[Event] = []
    async with team.start() as running, running.stream("refund") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ApprovalRequested):
                edit = edits[str(event.request.arguments["order_id"])]
                await running.approve(event.request.request_id, EditArguments(arguments=edit))
            elif len(_resolved(list(events))) == 2:
                shop.release.set()
    assert sorted(shop.refunds) == [("1", 60), ("2", 70)]
    by_edit = {str(e.arguments["order_id"]): e for e in _resolved(list(events))}
    rewritten, passed = by_edit["9"], by_edit["2"]
    assert (rewritten.guarded, rewritten.ran_arguments) == (
        "rewritten",
        {"order_id": "1", "amount": 60},
    )
    assert rewritten.arguments == {"order_id": "9", "amount": 60}
    assert (passed.guarded, passed.ran_arguments, passed.guard_reason) == ("", None, "")
    assert passed.arguments == {"order_id": "2", "amount": 70}
    assert [e.guardrail for e in events if isinstance(e, GuardrailRewrote)] == ["cap"]


async def test_a_resumed_edit_is_resolved_with_the_verdict_and_journaled(tmp_path: Path) -> None:
    shop = Shop()
    team, _ = _capped(shop, "tell_model", plan_json(step("s1", "billing", "refund 9 40")))
    where = str(tmp_path / "runs.db")
    async with team.start(journal=where) as running:
        paused = await running.run("refund")
        (request,) = paused.pending_approvals
        edit = EditArguments(arguments={"order_id": "9", "amount": 50})
        await running.approve(request.request_id, edit)
        resumed = await running.resume(paused.run_id)
    assert resumed.status == "completed"
    assert shop.refunds == [("1", 50)]
    (live,) = _resolved(list(resumed.events))
    assert (live.guarded, live.ran_arguments) == ("rewritten", {"order_id": "1", "amount": 50})
    (journaled,) = await _journaled(where, paused.run_id)
    assert journaled.arguments == {"order_id": "9", "amount": 50}
    assert (journaled.guarded, journaled.ran_arguments) == (
        "rewritten",
        {"order_id": "1", "amount": 50},
    )


def test_an_older_journals_resolution_reads_with_nothing_guarded() -> None:
    old = {  # as a regiment before these fields journaled one
        "run_id": "r1",
        "request_id": "apr-1",
        "tool": "issue_refund",
        "worker": "shop/billing",
        "step_id": "s1",
        "decision": "edit",
        "arguments": {"order_id": "1", "amount": 500},
    }
    resolved = msgspec.convert(old, ApprovalResolved)
    assert (resolved.guarded, resolved.ran_arguments, resolved.guard_reason) == ("", None, "")


async def test_a_run_cancelled_while_the_guards_judge_an_edit_resolves_it_unjudged(
    tmp_path: Path,
) -> None:
    shop = Shop()
    judging, never = anyio.Event(), anyio.Event()

    async def slow(call: ToolCallSubject) -> Pass:
        if call.arguments["amount"] == 77:  # the edit: judged until the run is cancelled
            judging.set()
            await never.wait()
        return Pass()

    plan = plan_json(step("s1", "billing", "refund 1 40"), step("s2", "slow", "slow"))
    team = _guarded(shop, slow, plan)  # (s2 works on: the run does not pause)
    where = str(tmp_path / "runs.db")
    async with team.start(journal=where) as running:
        async with running.stream("refund") as stream:
            async for event in stream:
                if isinstance(event, ApprovalRequested):
                    edit = EditArguments(arguments={"order_id": "1", "amount": 77})
                    await running.approve(event.request.request_id, edit)
                    await judging.wait()
                    break  # the reader leaves: the run is cancelled
        ending = stream.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    assert shop.refunds == []
    (resolved,) = await _journaled(where, ending.run_id)
    assert (resolved.decision, resolved.guarded) == ("edit", "unjudged")
    assert resolved.arguments == {"order_id": "1", "amount": 77}


def _guarded(shop: Shop, guard: Callable[[ToolCallSubject], Awaitable[Pass]], *plans: str) -> Team:
    team = shop_team(shop, *plans)
    assert isinstance(team.workers[0], Worker)
    billing = dataclasses.replace(
        team.workers[0], tool_guardrails={"issue_refund": [guardrail("tool_call")(guard)]}
    )
    return dataclasses.replace(team, workers=[billing, team.workers[1]])


async def _journaled(where: str, run_id: str) -> list[ApprovalResolved]:
    journal = await open_journal(where)
    try:
        entries = await journal.read(run_id)
    finally:
        await journal.close()
    return [
        msgspec.convert(e.record.event, ApprovalResolved)
        for e in entries
        if isinstance(e.record, EventRecorded) and e.record.kind == "ApprovalResolved"
    ]


def test_the_commands_line_says_what_the_guards_made_of_an_edit() -> None:
    base = ApprovalResolved(
        run_id="r1",
        request_id="apr-1",
        tool="issue_refund",
        worker="shop/billing",
        step_id="s1",
        decision="edit",
        decided_by="ana",
        arguments={"order_id": "9", "amount": 60},
    )
    rewritten = msgspec.structs.replace(
        base, guarded="rewritten", ran_arguments={"order_id": "1", "amount": 60}
    )
    refused = msgspec.structs.replace(base, guarded="refused", guard_reason="over 100")
    assert describe(base) == "  ok issue_refund [apr-1]: edit by ana"
    assert describe(rewritten) == (
        '  ok issue_refund [apr-1]: edit by ana, rewritten by its guards: ran with {"amount": 60,'
        ' "order_id": "1"}'
    )
    assert describe(refused) == (
        "  no issue_refund [apr-1]: edit by ana, refused by its guards: over 100"
    )
