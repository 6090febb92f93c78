"""A fan-out's steps are recorded and sent with no wait while their workers' mailboxes
have room; a full mailbox is waited on, and the steps after it are recorded and sent in
order once it has room (``send_all``)."""

from __future__ import annotations

import anyio
import pytest

from regiment.actors import Actor, open_actor_system
from regiment.hierarchy import PlanStep
from regiment.hierarchy._messages import AssignStep, StepContext, WorkerMessage
from regiment.hierarchy.run._changes import RunChange, StepSent
from regiment.hierarchy.run._dispatch import send_all
from regiment.hierarchy.run._journaling import UNJOURNALED

pytestmark = pytest.mark.anyio


class Held(Actor[WorkerMessage, None]):
    """Keeps the ids of the steps it gets; its first waits for ``gate``."""

    def __init__(self) -> None:
        self.got: list[str] = []
        self.gate = anyio.Event()

    async def receive(self, message: WorkerMessage) -> None:
        assert isinstance(message, AssignStep)
        await self.gate.wait()
        self.got.append(message.step.id)


def _sent(step_id: str) -> StepSent:
    step = PlanStep(id=step_id, description="work")
    context = StepContext(goal="g", plan_outline="")
    return StepSent(AssignStep(run_id="r1", plan_version=1, step=step, context=context), "w")


async def test_steps_past_a_full_mailbox_are_sent_in_order_once_it_has_room() -> None:
    held = Held()
    sends = [_sent(f"s{i}") for i in range(1, 5)]
    recorded: list[RunChange] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: held, name="w", capacity=1)
        refs = {"w": ref}
        async with anyio.create_task_group() as tg:
            tg.start_soon(send_all, sends, recorded.append, UNJOURNALED, refs, {})
            await anyio.wait_all_tasks_blocked()
            # s1 filled the mailbox; s2 went as the worker took s1 (held at its gate);
            # s3 is recorded and waits for room, s4 is not recorded yet.
            assert recorded == sends[:3]
            assert held.got == []
            held.gate.set()
        await ref.stop()
    assert recorded == sends
    assert held.got == ["s1", "s2", "s3", "s4"]


async def test_steps_with_room_are_all_sent_at_once() -> None:
    held = Held()
    held.gate.set()
    sends = [_sent(f"s{i}") for i in range(1, 4)]
    recorded: list[RunChange] = []
    async with open_actor_system() as system:
        ref = await system.spawn(lambda: held, name="w")
        assert await send_all(sends, recorded.append, UNJOURNALED, {"w": ref}, {}) == []
        assert recorded == sends
        await ref.stop()
    assert held.got == ["s1", "s2", "s3"]
