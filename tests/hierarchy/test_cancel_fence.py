"""A run its caller cancels starts no tool from then on, even while its planner is busy
(here: its turn waits for the journal) and has yet to take the cancel: a step whose model
answers right after the cancel does not refund anything."""

from __future__ import annotations

import json
from collections.abc import Iterable

import anyio
import pytest

from regiment.hierarchy import Planner, StepCompleted, Team, Worker
from regiment.journal import Lease, MemoryJournal, Record, StepReported
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.tools import tool

pytestmark = pytest.mark.anyio


class _SlowWrite(MemoryJournal):  # type: ignore[misc]  # (final: a test-only double)
    """A journal whose write of step s1's report (the planner's turn that commits it)
    waits for ``go``."""

    def __init__(self) -> None:
        super().__init__()
        self.go = anyio.Event()

    async def append_all(
        self, lease: Lease, records: Iterable[Record], *, durable: bool = False
    ) -> tuple[int, ...]:
        records = list(records)
        if any(isinstance(r, StepReported) and r.step_id == "s1" for r in records):
            await self.go.wait()  # the planner's turn waits here: it is busy
        return await super().append_all(lease, records, durable=durable)


async def test_a_cancelled_run_starts_no_tool_while_its_planner_is_busy() -> None:
    journal = _SlowWrite()
    answer = anyio.Event()
    log: list[str] = []

    @tool
    async def issue_refund(order: str) -> str:
        """Refund an order."""
        log.append(f"refund {order}")
        return "refunded"

    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            steps = [
                {"description": "check order 7", "worker": "clerk"},
                {"description": "refund order 7", "worker": "payer"},
            ]
            return json.dumps({"steps": steps})
        if request.role == "worker" and request.worker == "payer":
            if len(request.messages) > 1:
                return "refunded"
            await answer.wait()
            call = ToolCallPart(id="c1", name="issue_refund", arguments={"order": "7"})
            return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
        if request.role == "worker":
            return "order 7 checked"
        return "done"

    async def after_the_cancel() -> None:
        await anyio.wait_all_tasks_blocked()  # the cancel was sent; the planner is busy
        answer.set()  # the refund step's model answers now
        await anyio.wait_all_tasks_blocked()  # its tool started, or was held back
        journal.go.set()

    model = ScriptedModel(brain)
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        workers=[
            Worker(name="clerk", description="checks orders", model=model),
            Worker(name="payer", description="refunds", model=model, tools=[issue_refund]),
        ],
    )
    async with team.start(journal=journal) as running, anyio.create_task_group() as tg:
        async with running.stream("refund order 7") as stream:
            async for event in stream:
                if isinstance(event, StepCompleted):  # the planner waits on the journal
                    tg.start_soon(after_the_cancel)
                    break  # leaving the block cancels the run
        assert stream.ending is not None
        assert stream.ending.result.status == "cancelled"  # type: ignore[union-attr]
    assert log == []  # the refund's body never ran
