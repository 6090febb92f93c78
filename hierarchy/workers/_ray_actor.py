"""The actor a Ray-placed worker's steps go through (:class:`RayWorkerActor`), and the
team's ways to a step's run it is given (:class:`RunLinks`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from regiment.hierarchy._live_events import LiveChannel, live_sink
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy.workers._approval_gate import Approvals
from regiment.hierarchy.workers._journal_calls import RunCalls, RunLookup
from regiment.hierarchy.workers._loop import StepProgress
from regiment.hierarchy.workers._ray_cancel import CutEnds
from regiment.hierarchy.workers._ray_conduit import StepConduit
from regiment.hierarchy.workers._ray_mcp import PlacedTools
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._worker import Worker, step_limits
from regiment.telemetry import Telemetry, inject

if TYPE_CHECKING:
    from regiment.hierarchy.workers._ray import RayReplicas

__all__ = ("RayWorkerActor", "RunLinks")


@dataclasses.dataclass(frozen=True, slots=True)
class RunLinks:
    """The team's ways to a step's run: its calls (journal, deps), its live events, approvals."""

    runs: RunLookup | None = None
    channels: Mapping[str, LiveChannel] = dataclasses.field(default_factory=dict)
    approvals: Approvals | None = None


class RayWorkerActor(StepActor):
    """Hands a Ray-placed worker's steps to its replicas; the step bookkeeping
    (queueing, cancel scopes, timeouts, one report per step) is the shared one."""

    # A cut step's runner does not wait for its end on the replica (``_ray_cancel.end_cut``
    # does, in a task of this actor's): one given up on, or holding the stop, is one whose
    # runner is held elsewhere. Its replica is killed for Ray to restart once its grace is
    # over, if it still runs then: nothing of it goes on, nor holds the stop longer.
    given_up_then = (
        "its Ray replica is restarted unless the step ends there now, so nothing of it runs on"
    )
    held_then = (
        "its Ray replica is killed once the worker's cancel_grace is over (Ray restarts it), "
        "so the stop does not wait for the tool to return"
    )

    def __init__(
        self,
        worker: Worker,
        telemetry: Telemetry,
        replicas: RayReplicas,
        links: RunLinks | None = None,
        *,
        tools: PlacedTools | None = None,
    ) -> None:
        super().__init__(worker.name, telemetry, **step_limits(worker, replicas.count))
        self._worker = worker
        self._replicas = replicas
        self._links = links or RunLinks()
        # its tools as the team's process knows them (its replicas' MCP tools too): approvals
        self._tools = tools
        self._packed: tuple[object, bytes] | None = None  # the last deps pickled, and their bytes
        # A cut step's end on its replica: waited for in a task of this actor's (its
        # stop waits), not by the step's run (_ray_cancel.end_cut).
        self._ends = CutEnds(self._grace, self._start_end)
        replicas.acquire()

    def held_back(self, assign: AssignStep, held: bool) -> None:
        if (channel := self._links.channels.get(assign.run_id)) is not None:
            channel.fence.top_ups.queued(
                (assign.plan_version, assign.step.id, assign.attempt), held
            )

    async def work(self, assign: AssignStep, progress: StepProgress) -> StepReport:
        """Run the step on a replica, under this step's ``invoke_agent`` span."""
        links, name = self._links, self._worker.name
        run = links.runs(assign.run_id) if links.runs is not None else None
        channel = links.channels.get(assign.run_id)
        if channel is not None:  # the run's fence: no ack for a tool once a plan is over
            progress.fence = channel.fence
        conduit = StepConduit(
            assign,
            self._worker.toolset if self._tools is None else self._tools.current(),
            progress,
            run,
            live_sink(channel, assign.run_id, name),
            links.approvals,
            self._deps(run),
            worker=name,
            catch_up=None if self._tools is None else self._tools.caught_up,
        )
        report = await self._replicas.run(name, assign, inject(), conduit, self._ends)
        progress.usage, progress.model_calls = report.usage, report.model_calls
        progress.tool_calls = report.tool_calls
        return report

    def _start_end(self, end: Callable[[], Awaitable[None]]) -> None:
        self.ctx.start_soon(end, name=f"{self._worker.name} cut step's end on Ray")

    def _deps(self, run: RunCalls | None) -> bytes | None:
        """The run's deps pickled; a run's steps share one pickling (the last run's is kept)."""
        if run is None or run.deps is None:
            return None
        if self._packed is None or self._packed[0] is not run.deps:
            self._packed = (run.deps, self._replicas.pack(run.deps))
        return self._packed[1]

    async def on_start(self) -> None:
        # The replicas' records made between steps, logged here as they are made: a
        # task of this actor's, cancelled as it stops (one of the pool's actors reads).
        self.ctx.start_soon(self._replicas.follow_logs, name=f"{self._worker.name} Ray logs")

    async def on_stop(self) -> None:
        await super().on_stop()
        await self._replicas.release()
