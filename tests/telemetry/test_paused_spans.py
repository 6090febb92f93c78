"""A run that pauses for a decision: every span its pause cut reads as waiting for one,
down through nested teams, never as cancelled (decoded from real OTLP); the resume goes
on from there. A real cancel of a waiting call still reads cancelled."""

from __future__ import annotations

import pytest

from regiment.hierarchy import Team
from regiment.tools import tool

from .otlp_receiver import ReceivedSpan
from .test_cancelled_spans import Answer, _calls, _team, _traced

pytestmark = pytest.mark.anyio


def _reads_waiting(span: ReceivedSpan) -> bool:
    """No cancelled marker, no error: the span's work waits for a decision."""
    return (
        "regiment.cancelled" not in span.attributes
        and "error.type" not in span.attributes
        and span.status_code == 0
        and [name for name, _ in span.events if name != "regiment.approval.requested"] == []
    )


def _one(spans: tuple[ReceivedSpan, ...], name: str) -> ReceivedSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


async def test_a_paused_runs_call_and_its_wait_read_awaiting_a_decision() -> None:
    # Both read `regiment.cancelled=true` beside `regiment.tool.outcome=awaiting_approval`:
    # a pause read as if the payment had been called off.
    @tool(requires_approval=True)
    def pay(x: str) -> str:
        """Pay."""
        return x

    async def go(team: Team) -> None:
        assert (await team.run("go")).status == "paused"

    roles: dict[str, Answer] = {"worker": _calls("pay")}
    spans = await _traced(lambda t: _team(t, roles, tools=[pay]), go)
    assert all(_reads_waiting(s) for s in spans), spans
    call = _one(spans, "execute_tool pay")
    assert call.attributes["regiment.tool.outcome"] == "awaiting_approval"
    wait = _one(spans, "regiment.approval")
    assert "regiment.approval.decision" not in wait.attributes  # none was made yet
    assert isinstance(wait.attributes["regiment.approval.wait_s"], float)
