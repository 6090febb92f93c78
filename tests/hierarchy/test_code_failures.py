"""The application's own code failing inside a run: approvers, tool option functions,
check predicates. A failure that would repeat on every attempt ends the run at once,
and every failure is named where it happened."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from regiment.errors import StepFailed
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Approver,
    Tool,
    Toolset,
)

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


def pay(n: int) -> str:
    """Pay."""
    return f"paid {n}"


async def _pays(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    return f"paid: {results[0].content}" if results else tool_call_response("pay", {"n": 1})


async def _approves(request: ApprovalRequest) -> ApprovalDecision:
    return Approve()


async def _approver_down(request: ApprovalRequest) -> ApprovalDecision:
    raise ValueError("approval service is down")


async def _says_yes(request: ApprovalRequest) -> ApprovalDecision:
    return True  # type: ignore[return-value]


def _no_key(arguments: Mapping[str, object]) -> str:
    raise KeyError("order_id")


def _a_number(arguments: Mapping[str, object]) -> str:
    return 42  # type: ignore[return-value]


def _unsure(arguments: Mapping[str, object]) -> bool:
    raise ValueError("no limits table")


@pytest.mark.parametrize(
    ("options", "approver", "says"),
    [
        ({"requires_approval": True}, _approver_down, "the approver of tool 'pay' raised"),
        ({"requires_approval": True}, _says_yes, "the approver of tool 'pay' returned"),
        ({"idempotency_key": _no_key}, _approves, "the idempotency_key function of tool 'pay'"),
        ({"idempotency_key": _a_number}, _approves, "the idempotency_key function of tool"),
        ({"requires_approval": _unsure}, _approves, "the requires_approval predicate of tool"),
    ],
)
async def test_code_that_fails_every_call_ends_the_run_without_replans(
    options: dict[str, object], approver: Approver, says: str
) -> None:
    # Each was replanned three times (the default budget) and failed alike each time.
    brain = Brain([plan_json({"description": "pay one"})] * 8, work=_pays)
    model = ScriptedModel(brain)
    tools = Toolset("w", [Tool(pay, **options)], approver=approver)  # type: ignore[arg-type]
    worker = Worker(name="w", description="pays", model=model, tools=tools)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget())
    async with team.start() as running:
        for goal in ("first", "second"):
            with pytest.raises(StepFailed) as caught:
                await running.run(goal)
            assert caught.value.fatal
            assert says in str(caught.value)
            assert "the run ends without a replan" in str(caught.value)
    assert len(brain.plan_requests) == 2  # one plan a run
