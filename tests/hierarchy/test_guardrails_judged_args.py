"""A tool call the guards answer without running it is told with the arguments they
judged: when one guard rewrote the arguments and the next one refused the call, the
live events (``ToolCallStarted`` / ``ToolCallFinished``) and the step's tool outcome
said the model's arguments, which no guard refused; now they say the rewritten ones
(as a call that ran after a rewrite is told with the arguments it ran with)."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.hierarchy import Event, RunResult, ToolCallFinished, ToolCallStarted
from regiment.hierarchy.guard import (
    Guardrail,
    Outcome,
    Pass,
    Rewrite,
    ToolCallSubject,
    Trip,
)

from .test_guardrails_steps import Till, brain, failed_step, make_team, run

pytestmark = pytest.mark.anyio


def reroute(subject: ToolCallSubject) -> Outcome:
    """Sends every refund to order 99 (the model asked for 7)."""
    return Rewrite(dataclasses.replace(subject, arguments={"order_id": 99}))


def no_order_99(subject: ToolCallSubject) -> Outcome:
    return Trip("order 99 is closed") if subject.arguments == {"order_id": 99} else Pass()


def told(seen: list[Event]) -> list[tuple[str, dict[str, object], str]]:
    """The live tool-call events: kind, arguments, outcome."""
    out: list[tuple[str, dict[str, object], str]] = []
    for event in seen:
        if isinstance(event, ToolCallStarted):
            out.append(("started", dict(event.arguments), ""))
        elif isinstance(event, ToolCallFinished):
            out.append(("finished", dict(event.arguments), event.outcome))
    return out


@pytest.mark.parametrize("on_trip", ["tell_model", "fail_step"])
async def test_a_call_refused_after_a_rewrite_is_told_with_the_rewritten_arguments(
    on_trip: str,
) -> None:
    till = Till()
    refuse = Guardrail(no_order_99, "tool_call", on_trip=on_trip)  # type: ignore[arg-type]
    team = make_team(till, brain(), tool_guards={"issue_refund": [reroute, refuse]})
    outcome, seen = await run(team)
    assert till.refunds == []
    outcome_name = "guardrail" if on_trip == "tell_model" else "GuardrailError"
    assert told(seen) == [
        ("started", {"order_id": 99}, ""),
        ("finished", {"order_id": 99}, outcome_name),
    ]
    if on_trip == "fail_step":
        assert "order 99 is closed" in failed_step(outcome)
        return
    assert isinstance(outcome, RunResult)
    (call,) = outcome.steps[0].tool_outcomes
    assert call.arguments == {"order_id": 99}
    assert call.error_type == "guardrail"


async def test_a_call_refused_as_the_model_sent_it_is_told_with_those_arguments() -> None:
    till = Till()
    refuse = Guardrail(lambda s: Trip("no"), "tool_call", on_trip="tell_model")
    outcome, seen = await run(make_team(till, brain(), tool_guards={"issue_refund": [refuse]}))
    assert isinstance(outcome, RunResult)
    assert told(seen) == [
        ("started", {"order_id": 7}, ""),
        ("finished", {"order_id": 7}, "guardrail"),
    ]


async def test_a_rewrite_that_does_not_validate_is_told_with_what_it_wrote() -> None:
    def bad_order(subject: ToolCallSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, arguments={"order_id": "seven"}))

    till = Till()
    outcome, seen = await run(make_team(till, brain(), tool_guards={"issue_refund": [bad_order]}))
    assert isinstance(outcome, RunResult)
    assert told(seen) == [
        ("started", {"order_id": "seven"}, ""),
        ("finished", {"order_id": "seven"}, "invalid_arguments"),
    ]
