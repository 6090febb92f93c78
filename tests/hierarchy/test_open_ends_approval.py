"""``OpenEnds`` on a real run whose reader left while a tool call waited for an approval
decision (step s2) and another step still worked (s1): the call's body never ran, and its
step's report lists no outcome for it (a call that never started is not listed). Its end
said ``"cut"`` (started, may have acted), as for a body cut halfway: ``regiment run`` and
the service told a person that a refund waiting for their decision may have been made.
It ends ``"awaiting_approval"`` now, as the live ``ToolCallFinished`` of a paused run's
waiting call does; a call approved before the reader left is cut as any other."""

from __future__ import annotations

import json

import anyio
import pytest

from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    OpenEnds,
    Planner,
    RunCompleted,
    Team,
    ToolCallFinished,
    ToolCallStarted,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.models import tool_call_response as call
from regiment.tools import tool

pytestmark = pytest.mark.anyio


def _team(ran: list[str], released: anyio.Event) -> Team:
    @tool(requires_approval=True)
    async def refund(order: str) -> str:
        """Refunds an order."""
        ran.append(order)
        return "refunded"

    @tool
    async def probe(order: str) -> str:
        """Probes an order; this one does not return while the test reads."""
        await released.wait()
        return "probed"

    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return json.dumps({"steps": [{"description": "probe"}, {"description": "refund"}]})
        if request.role == "worker" and len(request.messages) == 1:
            tool_name = "probe" if request.step_id == "s1" else "refund"
            return call(tool_name, {"order": "88213"})
        return text_response("done")

    model = ScriptedModel(brain)
    worker = Worker(
        name="till",
        description="refunds",
        model=model,
        tools=[refund, probe],
        approval_timeout=None,
    )
    return Team(name="shop", planner=Planner(model=model), workers=[worker])


def _both_going(seen: list[Event]) -> bool:
    """s1's probe has started and s2's refund waits for a decision."""
    probing = any(isinstance(e, ToolCallStarted) and e.tool == "probe" for e in seen)
    return probing and any(isinstance(e, ApprovalRequested) for e in seen)


async def test_a_call_waiting_for_a_decision_ends_awaiting_approval_not_cut() -> None:
    ran: list[str] = []
    team = _team(ran, anyio.Event())
    seen: list[Event] = []
    opened = OpenEnds()
    async with team.start() as running:
        async with running.stream("refund order 88213") as events:
            async for event in events:
                seen.append(event)
                opened.see(event)
                if _both_going(seen):
                    break  # the reader leaves (a Ctrl-C): s1 still works, s2 waits
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    assert ending.result.status == "cancelled"
    assert ran == []  # the refund's body never ran
    (waiting,) = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    s2 = next(r for r in ending.result.steps if r.step_id == "s2")
    assert s2.tool_outcomes == ()  # never started: not listed
    calls = [e for e in opened.ends(ending) if isinstance(e, ToolCallFinished)]
    assert {(c.step_id, c.tool): c.outcome for c in calls} == {
        ("s1", "probe"): "cut",  # its body was running: it may have acted
        ("s2", "refund"): "awaiting_approval",  # was "cut"
    }
    assert [c.call_id for c in calls if c.step_id == "s2"] == [waiting.call_id]


async def test_a_call_decided_before_the_reader_left_is_no_longer_waiting() -> None:
    # Its ApprovalResolved came: an approved body runs (or a denied call ends), so a call
    # still open at the end is cut as any other, not "awaiting_approval".
    opened = OpenEnds()
    team = _team([], anyio.Event())
    async with team.start() as running:
        async with running.stream("refund order 88213") as events:
            seen: list[Event] = []
            async for event in events:
                seen.append(event)
                opened.see(event)
                if _both_going(seen):
                    break
        ending = events.ending
    assert isinstance(ending, RunCompleted)
    (decided,) = [e.request.request_id for e in seen if isinstance(e, ApprovalRequested)]
    # A resolution is all OpenEnds needs to know: the call is no longer waiting.
    opened.see(
        ApprovalResolved(
            run_id=ending.result.run_id,
            request_id=decided,
            tool="refund",
            worker="shop/till",
            step_id="s2",
            decision="approve",
        )
    )
    calls = [e for e in opened.ends(ending) if isinstance(e, ToolCallFinished)]
    assert {c.step_id: c.outcome for c in calls} == {"s1": "cut", "s2": "cut"}
