"""The caller's end of a Ray-placed step never lets a cut step's replica start a tool:
a tool's intent waits for the caller's ack, and a step cut (a replan, the run's end)
as the intent arrives gets none; its cancel goes to the replica instead. Without
Ray: the replica's side is the wire's bytes, the ack the call back to it."""

from __future__ import annotations

from collections.abc import Awaitable

import anyio
import pytest

from regiment.hierarchy._fence import StepFence
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._ray_conduit import StepConduit
from regiment.hierarchy.workers._wire import CallRecorded, encode
from regiment.tools import Toolset

from .test_ray_wire_messages import ASSIGN, INTENT

pytestmark = pytest.mark.anyio


class _IntentArrives:
    """The replica's stream, one item: a tool's intent, durable (its seq asks an ack)."""

    def __init__(self) -> None:
        self._items = [encode([CallRecorded(record=INTENT, seq=1)])]

    def __aiter__(self) -> _IntentArrives:
        return self

    async def __anext__(self) -> Awaitable[bytes]:
        if not self._items:
            raise StopAsyncIteration
        return _bytes(self._items.pop())


async def _bytes(data: bytes) -> bytes:
    return data


@pytest.mark.parametrize("cut", [False, True])
async def test_an_intent_is_acked_unless_its_step_was_cut(cut: bool) -> None:
    acked: list[int] = []

    async def ack(seq: int, payload: bytes) -> None:
        acked.append(seq)  # the replica would run the tool's body now

    progress = StepProgress()
    conduit = StepConduit(ASSIGN, Toolset("payer"), progress)
    with anyio.CancelScope() as scope:
        if cut:  # as the step's worker does on the planner's CancelStep
            progress.stopped = True
            scope.cancel()
        await conduit.drain(_IntentArrives(), ack)
    assert acked == ([] if cut else [1])
    assert progress.tool_calls == (0 if cut else 1)


async def test_an_intent_of_a_fenced_plan_waits_for_its_cut_unacked() -> None:
    """Its plan fenced (the planner decided; the step's cut not yet read by its busy
    worker): the intent gets no ack while the cut is on its way, nor after it."""
    acked: list[int] = []

    async def ack(seq: int, payload: bytes) -> None:
        acked.append(seq)

    progress = StepProgress()
    progress.fence = StepFence()
    progress.fence.cut(ASSIGN.plan_version, "plan v1 is being replaced")
    conduit = StepConduit(ASSIGN, Toolset("payer"), progress)
    async with anyio.create_task_group() as tg:
        tg.start_soon(conduit.drain, _IntentArrives(), ack)
        await anyio.wait_all_tasks_blocked()
        assert acked == []  # it waits: on the old tree, the replica was told to go
        tg.cancel_scope.cancel()  # the step's cut arrives
    assert acked == []
    assert progress.tool_calls == 0
