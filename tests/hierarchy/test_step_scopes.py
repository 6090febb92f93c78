"""A worker's runner keeps one cancel scope across its steps and renews it only
after a step was cut short; timeouts come from one timer task per worker.

These drive a ``StepActor`` directly: a desk actor forwards assignments and
cancellations to it (so they carry a sender) and collects the reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import anyio.lowlevel
import pytest

from regiment.actors import Actor, ActorRef, open_actor_system
from regiment.hierarchy import PlanStep
from regiment.hierarchy._messages import (
    AssignStep,
    CancelStep,
    StepContext,
    StepReport,
    WorkerMessage,
)
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._step_actor import StepActor, _cancel
from regiment.telemetry import Telemetry

pytestmark = pytest.mark.anyio

TIMEOUT = 0.05  # seconds: the hanging steps below overrun it; the others never wait


@dataclass(frozen=True)
class Forward:
    message: WorkerMessage
    to: ActorRef[WorkerMessage, None]


class Desk(Actor[StepReport | Forward, None]):
    """Sends steps (as their sender) and keeps the reports, by step id."""

    def __init__(self) -> None:
        self.reports: dict[str, StepReport] = {}
        self.arrived: dict[str, anyio.Event] = {}

    def waiter(self, step_id: str) -> anyio.Event:
        return self.arrived.setdefault(step_id, anyio.Event())

    async def receive(self, message: StepReport | Forward) -> None:
        if isinstance(message, Forward):
            await message.to.send(message.message)
            return
        assert message.step_id not in self.reports, f"two reports for {message.step_id}"
        self.reports[message.step_id] = message
        self.waiter(message.step_id).set()


class Steps(StepActor):
    """A step whose description is ``hang`` never ends; ``gate`` waits for ``gate``."""

    def __init__(self, *, runners: int, step_timeout: float | None = None) -> None:
        super().__init__("w", Telemetry(), max_concurrent=runners, step_timeout=step_timeout)
        self.started: list[str] = []
        self.gate = anyio.Event()

    async def work(self, assign: AssignStep, progress: StepProgress) -> StepReport:
        self.started.append(assign.step.id)
        if assign.step.description == "hang":
            await anyio.Event().wait()
        elif assign.step.description == "gate":
            await self.gate.wait()
        await anyio.lowlevel.checkpoint()  # a step that ends normally still checkpoints
        return progress.report(assign, "w", "done", output=f"did {assign.step.id}")


def _assign(step_id: str, description: str = "work") -> AssignStep:
    return AssignStep(
        run_id="r1",
        plan_version=1,
        step=PlanStep(id=step_id, description=description),
        context=StepContext(goal="g", plan_outline=""),
    )


async def test_a_runner_cancelled_mid_step_runs_the_next_step_in_a_fresh_scope() -> None:
    desk, steps = Desk(), Steps(runners=1)
    async with open_actor_system() as system:
        desk_ref = await system.spawn(lambda: desk, name="desk")
        worker = await system.spawn(lambda: steps, name="w")
        await desk_ref.send(Forward(_assign("s1", "hang"), worker))
        await anyio.wait_all_tasks_blocked()
        assert steps.started == ["s1"]
        cancel = CancelStep(run_id="r1", step_id="s1", reason="plan v1 is being replaced")
        await desk_ref.send(Forward(cancel, worker))
        await desk.waiter("s1").wait()
        # The same runner (the only one allowed) takes the next steps: a scope
        # left cancelled would cut them at their first checkpoint.
        for step_id in ("s2", "s3"):
            await desk_ref.send(Forward(_assign(step_id), worker))
            await desk.waiter(step_id).wait()
    assert steps.started == ["s1", "s2", "s3"]
    first = desk.reports["s1"]
    # the report says why the planner cut it
    assert (first.status, first.error) == (
        "cancelled",
        "cancelled by the planner: plan v1 is being replaced",
    )
    assert [desk.reports[s].status for s in ("s2", "s3")] == ["done", "done"]
    assert desk.reports["s3"].output == "did s3"


async def test_a_step_cancelled_while_queued_never_starts_and_the_runner_goes_on() -> None:
    desk, steps = Desk(), Steps(runners=1)
    async with open_actor_system() as system:
        desk_ref = await system.spawn(lambda: desk, name="desk")
        worker = await system.spawn(lambda: steps, name="w")
        for message in (_assign("s1", "gate"), _assign("s2"), _assign("s3")):
            await desk_ref.send(Forward(message, worker))
        await anyio.wait_all_tasks_blocked()
        await desk_ref.send(Forward(CancelStep(run_id="r1", step_id="s2"), worker))
        await anyio.wait_all_tasks_blocked()
        steps.gate.set()
        await desk.waiter("s3").wait()
    assert steps.started == ["s1", "s3"]  # s2 was cancelled before a runner took it
    assert {s: r.status for s, r in desk.reports.items()} == {
        "s1": "done",
        "s2": "cancelled",
        "s3": "done",
    }


async def test_a_step_cut_as_it_ends_keeps_its_report_and_the_next_step_runs() -> None:
    """A cancel that lands after the step's last checkpoint: the step's own report
    stands, and its spent scope is not reused."""

    class EndsAtOnce(Steps):
        async def work(self, assign: AssignStep, progress: StepProgress) -> StepReport:
            if assign.step.id == "s1":
                _cancel(self, CancelStep(run_id="r1", step_id="s1"))  # no checkpoint after
                return progress.report(assign, "w", "done", output="finished anyway")
            return await super().work(assign, progress)

    desk, steps = Desk(), EndsAtOnce(runners=1)
    async with open_actor_system() as system:
        desk_ref = await system.spawn(lambda: desk, name="desk")
        worker = await system.spawn(lambda: steps, name="w")
        await desk_ref.send(Forward(_assign("s1"), worker))
        await desk.waiter("s1").wait()
        await desk_ref.send(Forward(_assign("s2"), worker))
        await desk.waiter("s2").wait()
    assert (desk.reports["s1"].status, desk.reports["s1"].output) == ("done", "finished anyway")
    assert desk.reports["s2"].status == "done"


async def test_timed_out_steps_leave_the_runner_and_the_timer_working() -> None:
    desk, steps = Desk(), Steps(runners=1, step_timeout=TIMEOUT)
    async with open_actor_system() as system:
        desk_ref = await system.spawn(lambda: desk, name="desk")
        worker = await system.spawn(lambda: steps, name="w")
        # Each overrunning step starts after the last one timed out, so the timer
        # must wake again for each; a quick step between them is not cut.
        for step_id, description in (("s1", "hang"), ("s2", "work"), ("s3", "hang")):
            await desk_ref.send(Forward(_assign(step_id, description), worker))
            await desk.waiter(step_id).wait()
    assert steps.started == ["s1", "s2", "s3"]
    statuses = {s: r.status for s, r in desk.reports.items()}
    assert statuses == {"s1": "timed_out", "s2": "done", "s3": "timed_out"}
    assert desk.reports["s3"].error == (
        f"step took longer than the worker's step_timeout of {TIMEOUT}s"
    )


async def test_two_runners_time_out_their_own_steps() -> None:
    desk, steps = Desk(), Steps(runners=2, step_timeout=TIMEOUT)
    async with open_actor_system() as system:
        desk_ref = await system.spawn(lambda: desk, name="desk")
        worker = await system.spawn(lambda: steps, name="w")
        for step_id in ("s1", "s2"):
            await desk_ref.send(Forward(_assign(step_id, "hang"), worker))
        await desk.waiter("s1").wait()
        await desk.waiter("s2").wait()
        await desk_ref.send(Forward(_assign("s3"), worker))
        await desk.waiter("s3").wait()
    statuses = {s: r.status for s, r in desk.reports.items()}
    assert statuses == {"s1": "timed_out", "s2": "timed_out", "s3": "done"}


async def test_a_stopping_worker_reports_its_running_step_cancelled() -> None:
    desk, steps = Desk(), Steps(runners=1, step_timeout=TIMEOUT * 100)
    async with open_actor_system() as system:
        desk_ref = await system.spawn(lambda: desk, name="desk")
        worker = await system.spawn(lambda: steps, name="w")
        await desk_ref.send(Forward(_assign("s1", "hang"), worker))
        await anyio.wait_all_tasks_blocked()
        await worker.stop()
        await desk.waiter("s1").wait()
    report = desk.reports["s1"]
    assert (report.status, report.error) == ("cancelled", "worker stopped")
