"""The application's own code failing inside a run: approvers, tool option functions,
check predicates. A failure that would repeat on every attempt ends the run at once,
and every failure is named where it happened."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

import pytest

from regiment.errors import RunError, StepFailed
from regiment.hierarchy import Budget, Check, Planner, StepReport, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
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


def _forgets_to_return(arguments: Mapping[str, object]) -> bool:
    # A predicate that forgot its return: the call ran with no approval asked.
    return None  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("options", "approver", "says"),
    [
        ({"requires_approval": True}, _approver_down, "the approver of tool 'pay' raised"),
        ({"requires_approval": True}, _says_yes, "the approver of tool 'pay' returned"),
        ({"idempotency_key": _no_key}, _approves, "the idempotency_key function of tool 'pay'"),
        ({"idempotency_key": _a_number}, _approves, "the idempotency_key function of tool"),
        ({"requires_approval": _unsure}, _approves, "the requires_approval predicate of tool"),
        (
            {"requires_approval": _forgets_to_return},
            _approves,
            "the requires_approval predicate of tool 'pay' returned the NoneType None, not "
            "True or False, so the call did not run",
        ),
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


def _reads_total(report: StepReport) -> bool:
    return int(report.output.split()[-1]) > 0  # "did: count" has no number


@pytest.mark.parametrize(
    ("check", "raised"),
    [
        (Check(description="a total", predicate=_reads_total), "invalid literal for int()"),
        (
            Check(description="a total", predicate=lambda r: False, explain=_reads_total),  # type: ignore[arg-type]
            "explain failed",
        ),
    ],
)
async def test_a_check_that_raises_is_logged_once_with_the_step(
    caplog: pytest.LogCaptureFixture, check: Check, raised: str
) -> None:
    # A check that raised failed (and replanned) with no log record, unlike a guard.
    brain = Brain([plan_json({"description": "count", "check": "total"}), plan_json()])
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="counts", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], checks={"total": check})
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await team.run("goal")
    assert result.status == "completed"  # the replan gave up the step
    (record,) = [r for r in caplog.records if "check 'total' raised" in r.getMessage()]
    assert record.name.startswith("regiment")
    assert record.levelno == logging.WARNING
    assert record.exc_info is not None
    assert raised in record.getMessage()
    assert record.getMessage().startswith("w s1: check 'total' raised, so it failed (")
    context = (record.__dict__["run_id"], record.__dict__["step_id"], record.__dict__["worker"])
    assert context == (result.run_id, "s1", "w")


class BrokenModel:
    """A model of the application's whose code raises for one role."""

    name = "mine"
    provider = "in-house"

    def __init__(self, broken: str) -> None:
        self.broken = broken

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.role == self.broken:
            raise ValueError("model broke")
        if request.role == "planner":
            return text_response(json.dumps({"steps": [{"id": "s1", "description": "x"}]}))
        return text_response("done")


BROKE = "model 'mine' (BrokenModel) raised ValueError: model broke"


async def test_a_worker_model_that_raises_is_named_in_the_step_error() -> None:
    # The step said only "ValueError: model broke".
    model = BrokenModel("worker")
    worker = Worker(name="w", description="works", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], budget=Budget(replans=0))
    with pytest.raises(StepFailed) as caught:
        await team.run("goal")
    assert caught.value.cause == f"step s1 (x) ended failed: {BROKE}"


@pytest.mark.parametrize(("role", "purpose"), [("planner", "plan"), ("synthesizer", "synthesis")])
async def test_a_planner_side_model_that_raises_is_named_in_the_run_error(
    role: str, purpose: str
) -> None:
    # The run said "the plan model call failed: ValueError: model broke".
    model = BrokenModel(role)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="works", model=model)],
    )
    with pytest.raises(RunError) as caught:
        await team.run("goal")
    assert str(caught.value) == f"the {purpose} model call failed: {BROKE}"
    assert type(caught.value.__cause__) is ValueError  # the model's own exception, unchanged
