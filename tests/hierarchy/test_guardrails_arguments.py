"""A tool-call guard sees the arguments as the tool's schema reads them: coerced,
defaults filled in; arguments that do not validate never reach it, and a guard's
rewrite is held to the same schema."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from regiment.hierarchy import GuardrailRewrote, Planner, RunCompleted, RunResult, Team, Worker
from regiment.hierarchy.guard import GuardLike, Outcome, Pass, Rewrite, ToolCallSubject
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Depot:
    """A shipping tool that records what it shipped, and what its guards were shown."""

    shipped: list[tuple[int, datetime.date, bool]] = dataclasses.field(default_factory=list)
    shown: list[dict[str, object]] = dataclasses.field(default_factory=list)

    def ship_tool(self) -> object:
        @tool
        def ship(order_id: int, on: datetime.date, express: bool = False) -> str:
            """Ship an order on a day."""
            self.shipped.append((order_id, on, express))
            return f"order {order_id} ships {on.isoformat()}"

        return ship

    def watch(self, subject: ToolCallSubject) -> Outcome:
        self.shown.append(dict(subject.arguments))
        return Pass()


def sends(arguments: dict[str, object]) -> Brain:
    """A brain whose worker calls ``ship`` with ``arguments``, then reports the result."""

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("ship", arguments, call_id="c1")  # type: ignore[arg-type]
        return f"tool said: {results[0].content} (error={results[0].is_error})"

    return Brain([plan_json({"description": "ship order 7"})], work=work)


async def run(
    depot: Depot, brain: Brain, guards: list[GuardLike]
) -> tuple[RunResult, list[object]]:
    model = ScriptedModel(brain)
    worker = Worker(
        name="shipping",
        description="ships",
        model=model,
        tools=[depot.ship_tool()],  # type: ignore[list-item]
        tool_guardrails={"ship": guards},
    )
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    async with team.start() as running, running.stream("ship order 7") as events:
        seen: list[object] = [event async for event in events]
    last = seen[-1]
    assert isinstance(last, RunCompleted)
    return last.result, seen


async def test_the_guard_sees_coerced_arguments_with_defaults_filled_in() -> None:
    depot = Depot()
    result, _ = await run(depot, sends({"order_id": 7.0, "on": "2026-12-03"}), [depot.watch])
    assert depot.shown == [{"order_id": 7, "on": "2026-12-03", "express": False}]
    assert type(depot.shown[0]["order_id"]) is int
    assert depot.shipped == [(7, datetime.date(2026, 12, 3), False)]
    assert result.steps[0].output == "tool said: order 7 ships 2026-12-03 (error=False)"


async def test_invalid_arguments_get_the_tool_error_and_the_guard_is_not_called() -> None:
    depot = Depot()
    result, _ = await run(depot, sends({"order_id": "seven", "on": "2026-12-03"}), [depot.watch])
    assert depot.shown == []
    assert depot.shipped == []
    output = result.steps[0].output
    assert isinstance(output, str)
    assert output.startswith("tool said: invalid arguments for tool 'ship': ")
    assert "order_id" in output
    assert output.endswith("(error=True)")


async def test_a_rewrite_is_validated_and_reaches_the_tool() -> None:
    depot = Depot()

    def express(subject: ToolCallSubject) -> Outcome:
        return Rewrite(dataclasses.replace(subject, arguments={**subject.arguments, "express": 1}))

    result, seen = await run(depot, sends({"order_id": 7, "on": "2026-12-03"}), [express])
    # strict JSON reading: 1 is not a boolean, so the rewrite is refused like a bad call
    assert depot.shipped == []
    output = result.steps[0].output
    assert isinstance(output, str)
    assert output.startswith(
        "tool said: invalid arguments for tool 'ship' after a guardrail rewrote them: "
    )
    assert "express" in output
    assert [e.guardrail for e in seen if isinstance(e, GuardrailRewrote)] == ["express"]

    def express_ok(subject: ToolCallSubject) -> Outcome:
        return Rewrite(
            dataclasses.replace(subject, arguments={**subject.arguments, "express": True})
        )

    later = Depot()
    done, _ = await run(
        later, sends({"order_id": 7, "on": "2026-12-03"}), [express_ok, later.watch]
    )
    assert later.shipped == [(7, datetime.date(2026, 12, 3), True)]
    assert later.shown == [{"order_id": 7, "on": "2026-12-03", "express": True}]
    assert done.steps[0].output == "tool said: order 7 ships 2026-12-03 (error=False)"
