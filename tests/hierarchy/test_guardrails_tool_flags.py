"""A tool call the guards refuse, or whose result they rewrite, looks like any
other call that failed or succeeded: in the live events (``ToolCallStarted`` /
``ToolCallFinished``), in ``ToolFailed`` and in the step's tool outcomes, with an
``error_type`` that matches ``is_error``."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.hierarchy import (
    Event,
    RunResult,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Worker,
)
from regiment.hierarchy.guard import (
    Guardrail,
    Outcome,
    Pass,
    Rewrite,
    ToolCallSubject,
    ToolResultSubject,
    Trip,
)
from regiment.tools import Tool, tool

from .test_guardrails_steps import Till, brain, failed_step, make_team, no_refunds, run

pytestmark = pytest.mark.anyio


def live(seen: list[Event]) -> list[tuple[str, str, str]]:
    """The live tool-call events: kind, tool, outcome."""
    out: list[tuple[str, str, str]] = []
    for event in seen:
        if isinstance(event, ToolCallStarted):
            out.append(("started", event.tool, ""))
        elif isinstance(event, ToolCallFinished):
            out.append(("finished", event.tool, event.outcome))
    return out


async def test_a_refused_call_is_started_and_finished_in_the_live_events() -> None:
    till = Till()
    guard = Guardrail(no_refunds, "tool_call", on_trip="tell_model")
    outcome, seen = await run(make_team(till, brain(), worker_guards=[guard]))
    assert isinstance(outcome, RunResult)
    assert till.refunds == []
    assert live(seen) == [
        ("started", "issue_refund", ""),
        ("finished", "issue_refund", "guardrail"),
    ]
    started = next(e for e in seen if isinstance(e, ToolCallStarted))
    finished = next(e for e in seen if isinstance(e, ToolCallFinished))
    assert (started.call_id, started.step_id, started.worker) == ("c1", "s1", "billing")
    assert started.arguments == finished.arguments == {"order_id": 7}
    (failed,) = [e for e in seen if isinstance(e, ToolFailed)]
    assert failed.error_type == "guardrail"


async def test_a_call_a_fail_step_guard_trips_on_finishes_with_the_error() -> None:
    till = Till()
    outcome, seen = await run(make_team(till, brain(), worker_guards=[no_refunds]))
    failed_step(outcome)
    assert till.refunds == []
    assert live(seen) == [
        ("started", "issue_refund", ""),
        ("finished", "issue_refund", "GuardrailError"),
    ]


async def test_a_rewrite_that_fails_validation_is_told_as_invalid_arguments() -> None:
    def bad_order(subject: ToolCallSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, arguments={"order_id": "seven"}))

    till = Till()
    outcome, seen = await run(make_team(till, brain(), tool_guards={"issue_refund": [bad_order]}))
    assert isinstance(outcome, RunResult)
    assert till.refunds == []
    assert live(seen) == [
        ("started", "issue_refund", ""),
        ("finished", "issue_refund", "invalid_arguments"),
    ]


def _failing_tools(till: Till) -> list[Tool[..., object]]:
    @tool
    def issue_refund(order_id: int) -> str:
        """Refund an order."""
        till.refunds.append(order_id)
        raise ValueError("the till is closed")

    return [issue_refund]


def _worker_of(team: object) -> Worker:
    (worker,) = team.workers  # type: ignore[attr-defined]
    assert isinstance(worker, Worker)
    return worker


async def test_an_error_rewritten_into_a_success_loses_its_error_type() -> None:
    def excuse(subject: ToolResultSubject) -> Outcome:
        if subject.is_error:
            return Rewrite(dataclasses.replace(subject, content="queued", is_error=False))
        return Pass()

    till = Till()
    team = make_team(till, brain(), worker_guards=[excuse])
    worker = dataclasses.replace(
        _worker_of(team), tools=_failing_tools(till), on_tool_error="raise"
    )
    team = dataclasses.replace(team, workers=[worker])
    outcome, seen = await run(team)
    assert isinstance(outcome, RunResult)  # not failed by on_tool_error="raise"
    (call,) = outcome.steps[0].tool_outcomes
    assert (call.is_error, call.error_type, call.content) == (False, None, "queued")
    assert not [e for e in seen if isinstance(e, ToolFailed)]


async def test_a_success_rewritten_into_an_error_is_the_guards_not_the_tools() -> None:
    def refuse_quietly(subject: ToolResultSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, content="not today", is_error=True))

    told = Guardrail(lambda s: Trip("no amounts"), "tool_result", on_trip="tell_model")
    for guard in (refuse_quietly, told):
        till = Till()
        team = make_team(till, brain(), worker_guards=[guard])
        team = dataclasses.replace(
            team, workers=[dataclasses.replace(_worker_of(team), on_tool_error="raise")]
        )
        outcome, seen = await run(team)
        assert isinstance(outcome, RunResult), outcome  # the tool did not raise
        (call,) = outcome.steps[0].tool_outcomes
        assert (call.is_error, call.error_type, call.raised) == (True, "guardrail", False)
        (failed,) = [e for e in seen if isinstance(e, ToolFailed)]
        assert failed.error_type == "guardrail"
        assert till.refunds == [7]


async def test_an_error_still_an_error_after_a_rewrite_keeps_its_type() -> None:
    def reword(subject: ToolResultSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, content="the refund failed"))

    till = Till()
    team = make_team(till, brain(), worker_guards=[reword])
    team = dataclasses.replace(
        team, workers=[dataclasses.replace(_worker_of(team), tools=_failing_tools(till))]
    )
    outcome, _ = await run(team)
    assert isinstance(outcome, RunResult)
    (call,) = outcome.steps[0].tool_outcomes
    assert (call.is_error, call.error_type, call.raised) == (True, "ValueError", True)
