"""A streamed answer that is cut: the synthesizer's deltas are not the run's answer.

The README shows an answer as it is written by keeping the synthesizer's text deltas;
a run whose wall clock runs out while the answer streams ends ``partial`` with an
answer no model wrote, so that recipe must also print the closing event's answer.
"""

from __future__ import annotations

import anyio
import pytest

from regiment.hierarchy import (
    Budget,
    Planner,
    RunCompleted,
    RunEvents,
    RunningTeam,
    Team,
    TextDelta,
    Worker,
)
from regiment.models import (
    DeltaHandler,
    Model,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPartDelta,
)

from .brains import plan_json

pytestmark = pytest.mark.anyio

WRITTEN = "The refund of order 88213 "  # what the synthesizer streams before it stalls


def _brain(request: ModelRequest) -> str:
    match request.role:
        case "planner":
            return plan_json({"description": "look up order 88213", "worker": "clerk"})
        case "worker":
            return "order 88213: paid, eligible"
        case _:
            raise AssertionError(request.role)


class _StallingSynthesizer:
    """Streams the start of an answer, then never finishes it (until cancelled)."""

    name = "stalling"
    provider = "test"

    def __init__(self) -> None:
        self.cancelled = False

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise AssertionError("a streamed run streams its answer")

    async def stream(self, request: ModelRequest, on_delta: DeltaHandler) -> ModelResponse:
        await on_delta(TextPartDelta(index=0, text=WRITTEN))
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled = True
        raise AssertionError("unreachable")


def _team(synthesizer: Model | None) -> Team:
    model = ScriptedModel(_brain)
    return Team(
        name="refunds",
        planner=Planner(model=model, synthesizer_model=synthesizer),
        workers=[Worker(name="clerk", description="looks up orders", model=model)],
        budget=Budget(wall_clock=1.0),
    )


async def _shown(running: RunningTeam, goal: str) -> tuple[str, RunEvents]:
    """What the README's recipe prints of the answer, and the run's events."""
    printed: list[str] = []
    async with running.stream(goal) as events:
        shown = ""
        async for event in events:
            if isinstance(event, TextDelta) and event.role == "synthesizer":
                printed.append(event.text)
                shown += event.text
            elif isinstance(event, RunCompleted):
                answer, written = event.result.answer, shown.strip()
                if written and answer.startswith(written):
                    printed.append(answer[len(written) :])
                else:
                    printed.append("\n\n" + answer)
    return "".join(printed), events


async def test_an_answer_cut_by_the_wall_clock_is_not_what_its_deltas_wrote() -> None:
    stalling = _StallingSynthesizer()
    async with _team(stalling).start() as running:
        printed, events = await _shown(running, "refund 88213?")

    end = events.ending
    assert isinstance(end, RunCompleted)
    assert end.result.status == "partial"
    assert end.result.budget_exhausted == "wall_clock"
    assert stalling.cancelled  # the cut call really stopped
    # what streamed is not the answer, nor a part of it: only the closing event has it
    assert not end.result.answer.startswith(WRITTEN.strip())
    assert "order 88213: paid, eligible" in end.result.answer
    assert printed == WRITTEN + "\n\n" + end.result.answer


async def test_the_recipe_prints_a_whole_streamed_answer_once() -> None:
    answer = "Order 88213 is paid and eligible: refund it. "  # the answer is the text, stripped
    async with _team(ScriptedModel([answer], delta_size=4)).start() as running:
        printed, events = await _shown(running, "refund 88213?")

    end = events.ending
    assert isinstance(end, RunCompleted)
    assert end.result.status == "completed"
    assert end.result.answer == answer.strip()
    assert printed == answer  # each piece once, and nothing printed twice
