"""A step of a plan the planner has just disproved starts no tool: the refund of an
order found ineligible is never issued because its step was still in flight.

The race, made exact: two independent steps; the eligibility step's check fails, and
the refund step's model answers (with the refund call) at that very moment: the check
itself lets it answer. On the old tree the refund's body ran after the planner had
decided to replan, as the cancel for its step was still in its worker's mailbox."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.actors import ActorRef
from regiment.hierarchy import (
    Check,
    Pass,
    Planner,
    StaleReportDropped,
    StepReport,
    Team,
    TeamWorker,
    ToolCallSubject,
    Worker,
)
from regiment.hierarchy._messages import CancelStep, WorkerMessage
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Tool,
    Toolset,
    tool,
)

pytestmark = pytest.mark.anyio


class Desk:
    """The eligibility step answers once the refund step's model is asked, and that
    model answers once the eligibility check has judged."""

    def __init__(self) -> None:
        self.judged = anyio.Event()
        self.waiting = anyio.Event()  # the refund step's model is asked: the check may run
        self.log: list[str] = []

    def eligible(self, report: StepReport) -> bool:
        self.log.append(f"judged {report.step_id}")
        self.judged.set()  # the refund step's model answers now, as the planner replans
        return "not eligible" not in report.output

    async def brain(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner" and "This is step s2" in request.messages[0].text:
            return json.dumps({"steps": [{"description": "refund order 7 now"}]})  # nested
        if request.role == "planner":
            steps = [
                {"description": "check order 7", "worker": "clerk", "check": "eligible"},
                {"description": "refund order 7", "worker": "payer"},
            ]
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"description": "flag order 7", "worker": "clerk"}]})
        if request.role == "worker" and request.worker == "payer":
            if len(request.messages) > 1:
                return "refunded"
            self.waiting.set()
            await self.judged.wait()
            call = ToolCallPart(id="c1", name="issue_refund", arguments={"order": "7"})
            return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
        if request.role == "worker":
            await self.waiting.wait()
            return "order 7 is not eligible" if "check" in request.messages[0].text else "flagged"
        return "order 7 was flagged"


def payer(
    model: ScriptedModel, refund: Tool[..., object], *, nested: bool, name: str = "payer"
) -> Worker | TeamWorker:
    worker = Worker(name=name, description="refunds", model=model, tools=[refund])
    if not nested:
        return worker
    team = Team(name="payments", planner=Planner(model=model), workers=[worker])
    return TeamWorker(name=name, description="a payments team", team=team)


@pytest.mark.parametrize("nested", [False, True], ids=["worker", "nested-team"])
async def test_a_disproved_plan_starts_no_tool_of_a_step_in_flight(nested: bool) -> None:
    desk = Desk()

    @tool
    async def issue_refund(order: str) -> str:
        """Refund an order."""
        desk.log.append(f"refund {order}")
        return "refunded"

    model = ScriptedModel(desk.brain)
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        workers=[
            Worker(name="clerk", description="checks and flags orders", model=model),
            payer(model, issue_refund, nested=nested),
        ],
        checks={"eligible": Check(description="the order is eligible", predicate=desk.eligible)},
    )
    result = await team.run("refund order 7 if it is eligible")

    assert desk.log == ["judged s1"]  # the refund's body never ran
    assert result.status == "completed"
    assert [r.step_id for r in result.steps] == ["s1", "s3"]  # s3: the replan's flag
    (dropped,) = [e for e in result.events if isinstance(e, StaleReportDropped)]
    assert (dropped.step_id, dropped.report_version, dropped.status) == ("s2", 1, "cancelled")


class BusyDesk:
    """Two refund steps (one per payer) whose models answer as the eligibility check
    fails, while each payer's actor has a burst of mail queued (``poke``): the planner's
    cut of their steps waits behind it (their actors are busy, and one reading a burst
    lets other tasks run every 64 messages), so both steps run on before the cut comes,
    in whatever order the event loop (trio's shuffles, under Hypothesis) takes them."""

    def __init__(self, poke: Callable[[str], None], *, waits_in: str = "model") -> None:
        self.poke = poke  # queue harmless mail for a worker: its actor is busy until it reads it
        self.waits_in = waits_in  # where the refund call waits: "model", "approval", "guard"
        self.asked: dict[str, anyio.Event] = {"7": anyio.Event(), "8": anyio.Event()}
        self.answer: dict[str, anyio.Event] = {"7": anyio.Event(), "8": anyio.Event()}
        self.log: list[str] = []

    def eligible(self, report: StepReport) -> bool:
        self.log.append(f"judged {report.step_id}")
        self.poke("payer7")
        self.poke("payer8")
        self.answer["7"].set()
        self.answer["8"].set()
        return "not eligible" not in report.output

    async def brain(self, request: ModelRequest) -> ModelResponse | str:
        for step, order in (("s2", "7"), ("s3", "8")):  # a payer team's own plan
            if request.role == "planner" and f"This is step {step}" in request.messages[0].text:
                return json.dumps({"steps": [{"description": f"refund order {order} now"}]})
        if request.role == "planner":
            steps = [
                {"description": "check order 7", "worker": "clerk", "check": "eligible"},
                {"description": "refund order 7", "worker": "payer7"},
                {"description": "refund order 8", "worker": "payer8"},
            ]
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"description": "flag order 7", "worker": "clerk"}]})
        if request.role == "worker" and request.worker in ("payer7", "payer8"):
            order = request.worker[-1]
            if len(request.messages) > 1:
                return "refunded"
            if self.waits_in == "model":
                self.asked[order].set()
                await self.answer[order].wait()
            call = ToolCallPart(id="c1", name="issue_refund", arguments={"order": order})
            return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
        if request.role == "worker":
            await self.asked["7"].wait()
            await self.asked["8"].wait()
            return "order 7 is not eligible" if "check" in request.messages[0].text else "flagged"
        return "order 7 was flagged"

    async def approver(self, request: ApprovalRequest) -> ApprovalDecision:
        """Approve a refund once the eligibility check has judged."""
        await self._judged(str(request.arguments["order"]))
        return Approve()

    async def guard(self, call: ToolCallSubject) -> Pass:
        """Let a refund through once the eligibility check has judged."""
        await self._judged(str(call.arguments["order"]))
        return Pass()

    async def _judged(self, order: str) -> None:
        self.asked[order].set()
        await self.answer[order].wait()


@pytest.mark.parametrize("nested", [False, True], ids=["worker", "nested-team"])
async def test_a_busy_worker_starts_no_tool_of_a_disproved_plan(
    caplog: pytest.LogCaptureFixture, nested: bool
) -> None:
    """The cut does not wait for the worker's actor to be idle: with mail queued for it
    as the plan is disproved, a step whose model answered then still starts no tool
    (the run's fence, which the planner moved as it decided). ``nested``: each payer is
    a team, busy as a worker of the run above, so its own run learns of the cut late;
    its step is fenced all the same (its run's fence holds when the fence above does).
    The calls held back are logged and traced as not run, cancelled."""
    refs: dict[str, ActorRef[WorkerMessage, None]] = {}

    def poke(worker: str) -> None:  # cancels for a run that does not exist: mail, no effect
        for _ in range(200):
            refs[worker].send_nowait(CancelStep(run_id="no-such-run"))

    desk = BusyDesk(poke)

    @tool
    async def issue_refund(order: str) -> str:
        """Refund an order."""
        desk.log.append(f"refund {order}")
        return "refunded"

    model = ScriptedModel(desk.brain)
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        telemetry=Telemetry(provider),
        workers=[
            Worker(name="clerk", description="checks and flags orders", model=model),
            payer(model, issue_refund, nested=nested, name="payer7"),
            payer(model, issue_refund, nested=nested, name="payer8"),
        ],
        checks={"eligible": Check(description="the order is eligible", predicate=desk.eligible)},
    )
    with caplog.at_level(logging.INFO, logger="regiment.worker"):
        async with team.start() as running:
            refs.update(running._spawner.runtime.worker_refs)  # (only to queue the mail above)
            result = await running.run("refund orders 7 and 8 if order 7 is eligible")

    assert desk.log == ["judged s1"]  # neither refund's body ran
    assert result.status == "completed"
    dropped = sorted(
        (e.step_id, e.status) for e in result.events if isinstance(e, StaleReportDropped)
    )
    assert dropped == [("s2", "cancelled"), ("s3", "cancelled")]
    assert all(not outcome for r in result.steps for outcome in r.tool_outcomes)
    # Each step held back: a line and an execute_tool span that says the call did not
    # run, and why.
    held = [r for r in caplog.records if "not starting issue_refund" in r.getMessage()]
    spans = [s for s in collector.spans() if s.name == "execute_tool issue_refund"]
    assert len(spans) == 2
    for record in held:
        assert "plan v1 is over: plan v1 is being replaced" in record.getMessage()
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["error.type"] == "cancelled"


@pytest.mark.parametrize("waits_in", ["approval", "guard"])
async def test_a_call_let_through_as_its_plan_is_disproved_does_not_run(waits_in: str) -> None:
    """A call waiting for its approval (or its tool_call guard) as the plan is disproved,
    let through right then: the fence is read again once the decision is in, so its
    body never runs, though the step's worker is busy and has yet to read its cut."""
    refs: dict[str, ActorRef[WorkerMessage, None]] = {}

    def poke(worker: str) -> None:
        for _ in range(200):
            refs[worker].send_nowait(CancelStep(run_id="no-such-run"))

    desk = BusyDesk(poke, waits_in=waits_in)

    @tool
    async def issue_refund(order: str) -> str:
        """Refund an order."""
        desk.log.append(f"refund {order}")
        return "refunded"

    def payer(name: str) -> Worker:
        if waits_in == "guard":
            guards = {"issue_refund": [desk.guard]}
            return Worker(
                name=name,
                description="refunds",
                model=model,
                tools=[issue_refund],
                tool_guardrails=guards,
            )
        tools = Toolset(name, [issue_refund], approver=desk.approver)
        return Worker(
            name=name,
            description="refunds",
            model=model,
            tools=tools,
            require_approval=["issue_refund"],
        )

    model = ScriptedModel(desk.brain)
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        workers=[
            Worker(name="clerk", description="checks and flags orders", model=model),
            payer("payer7"),
            payer("payer8"),
        ],
        checks={"eligible": Check(description="the order is eligible", predicate=desk.eligible)},
    )
    async with team.start() as running:
        refs.update(running._spawner.runtime.worker_refs)  # (only to queue the mail)
        result = await running.run("refund orders 7 and 8 if order 7 is eligible")

    assert desk.log == ["judged s1"]  # let through, yet neither refund's body ran
    assert result.status == "completed"
    dropped = sorted(
        (e.step_id, e.status) for e in result.events if isinstance(e, StaleReportDropped)
    )
    assert dropped == [("s2", "cancelled"), ("s3", "cancelled")]
