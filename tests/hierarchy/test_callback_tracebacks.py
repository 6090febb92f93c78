"""What the application's own code raised (an approver, a model of its own, a guard)
reaches the logs with its traceback: the run's error and the step's report keep only
its text, and a traceback nobody sees is a bug nobody finds. A step's is at DEBUG on
``regiment.worker`` (its end is the WARNING on ``regiment.run``), as a tool's is; a
guard's is on its one WARNING, as a check's is."""

from __future__ import annotations

import logging

import pytest

from regiment import (
    ApprovalRequest,
    Approve,
    GuardrailError,
    Pass,
    Planner,
    ScriptedModel,
    StepFailed,
    Team,
    Toolset,
    Trip,
    Worker,
    text_response,
    tool,
    tool_call_response,
)
from regiment.hierarchy import AnswerSubject, RunFailed
from regiment.models import ModelRequest, ModelResponse, Reply

pytestmark = pytest.mark.anyio


class Mine(Exception):
    """Raised by the application's code in these tests."""


@tool(requires_approval=True)
def refund(order: int = 1) -> str:
    """Refunds an order."""
    return "refunded"


def approver(request: ApprovalRequest) -> Approve:
    raise Mine("the approver's bug")


def guard(answer: AnswerSubject) -> Trip | Pass:
    raise Mine("the guard's bug")


class OwnModel:
    """A model of the application's, whose client fails."""

    name = "own"
    provider = "custom"
    price = None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise Mine("the model's bug")


def brain(request: ModelRequest) -> Reply:
    if request.role == "planner":
        return '{"steps": [{"description": "refund order 1"}]}'
    if request.role == "worker" and not request.messages[-1].text.startswith("refunded"):
        return tool_call_response("refund", {})
    return text_response("done")


def raised_mine(records: list[logging.LogRecord], logger: str) -> list[logging.LogRecord]:
    return [
        r for r in records
        if r.name == logger and r.exc_info is not None and isinstance(r.exc_info[1], Mine)
    ]  # fmt: skip


async def test_an_approver_that_raises_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(brain)
    tools = Toolset("billing", [refund], approver=approver)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="clerk", description="Refunds.", model=model, tools=tools)],
    )
    with caplog.at_level(logging.DEBUG, logger="regiment"), pytest.raises(StepFailed):
        await team.run("refund order 1")
    (logged,) = raised_mine(caplog.records, "regiment.worker")
    assert logged.getMessage() == "clerk s1: the step failed: Mine (traceback below)"
    assert logged.exc_info is not None
    assert logged.exc_info[2] is not None  # the traceback, down to the approver


async def test_a_model_of_the_applications_that_raises_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    team = Team(
        name="t",
        planner=Planner(model=ScriptedModel(brain)),
        workers=[Worker(name="clerk", description="Refunds.", model=OwnModel())],
    )
    with caplog.at_level(logging.DEBUG, logger="regiment"), pytest.raises(StepFailed):
        await team.run("refund order 1")
    logged = raised_mine(caplog.records, "regiment.worker")
    assert logged  # each attempt's (the replans try again)
    assert logged[0].getMessage() == (
        "clerk s1: the step failed: model 'own' (OwnModel) raised Mine (traceback below)"
    )


async def test_a_guard_that_raises_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(lambda r: brain(r) if r.role == "planner" else text_response("done"))
    team = Team(
        name="t",
        planner=Planner(model=model, synthesizer_guardrails=[guard]),
        workers=[Worker(name="clerk", description="Refunds.", model=model)],
    )
    with caplog.at_level(logging.WARNING, logger="regiment"), pytest.raises(GuardrailError):
        await team.run("refund order 1")
    logged = raised_mine(caplog.records, "regiment.guardrail")
    assert logged
    assert logged[0].getMessage() == "guardrail guard raised Mine: the guard's bug"


async def test_a_planner_model_of_the_applications_that_raises_in_a_stream_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stream (and so the service) ends on a ``RunFailed`` that keeps only the text."""
    team = Team(
        name="t",
        planner=Planner(model=OwnModel()),
        workers=[Worker(name="clerk", description="Refunds.", model=ScriptedModel(brain))],
    )
    ends: list[RunFailed] = []
    async with team.start() as running:
        with caplog.at_level(logging.DEBUG, logger="regiment"):
            async with running.stream("refund order 1") as events:
                async for event in events:
                    if isinstance(event, RunFailed):
                        ends.append(event)
    assert [e.message for e in ends] == [
        "the plan model call failed: model 'own' (OwnModel) raised Mine: the model's bug"
    ]
    (logged,) = raised_mine(caplog.records, "regiment.run")
    # The line names the class, not the message (it may quote the user's text, and an
    # exported log record carries the line without the traceback).
    assert logged.getMessage() == (
        "the plan model call failed: model 'own' (OwnModel) raised Mine (traceback below)"
    )
