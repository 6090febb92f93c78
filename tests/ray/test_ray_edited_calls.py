"""On a Ray-placed worker too, a person's edit of a call that needs approval meets the
call's ``tool_call`` guards before the body runs on the replica (see
``tests/hierarchy/test_guardrails_edited_calls.py``): the team's guard that refuses
refunds over 100 denies an edit to 500, and the body never runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    GuardrailTripped,
    Pass,
    RunCompleted,
    ToolCallSubject,
    Trip,
    guardrail,
)
from regiment.tools import EditArguments

from ._wire_team import paid, refunder_team

pytestmark = pytest.mark.anyio


@guardrail("tool_call", on_trip="tell_model")
def at_most_100(call: ToolCallSubject) -> Pass | Trip:
    """Refuses a refund over 100 (pickled by reference: the replica imports this module)."""
    return Trip("over 100") if int(str(call.arguments.get("amount", 0))) > 100 else Pass()


async def test_an_edit_on_a_replica_meets_the_teams_call_guards(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "refunds.jsonl")
    release = anyio.Event()
    team = dataclasses.replace(refunder_team(ledger, release), guardrails=[at_most_100])
    edit = EditArguments(arguments={"order_id": "88213", "amount": 500})
    tripped: list[str] = []
    result = None
    async with team.start() as running, running.stream("refund 88213") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                await running.approve(event.request.request_id, edit, by="ana")
            elif isinstance(event, ApprovalResolved):
                release.set()
            elif isinstance(event, GuardrailTripped):
                tripped.append(event.reason)
            elif isinstance(event, RunCompleted):
                result = event.result
    assert result is not None
    assert result.status == "completed"
    outputs = {s.step_id: s.output for s in result.steps}
    assert outputs["s1"] == (
        "billing: denied: the edited arguments: not run: guardrail 'at_most_100' refused "
        "this call: over 100"
    )
    assert tripped == ["over 100"]
    assert paid(ledger) == []
