"""The actor that runs a :class:`~regiment.hierarchy.workers._worker.Worker`'s steps.

A worker actor serves many runs at once. Each assigned step runs on one of
the actor's runner tasks (at most the worker's concurrency limit of them),
inside its own cancel scope whose deadline is the step timeout, so a
``CancelStep`` stops exactly that step. However a step ends (answer, iteration
cap, allowance used up, timeout, exception, cancel) it sends exactly one
``StepReport`` to whoever assigned it.

That bookkeeping lives in :class:`~regiment.hierarchy.workers._step_actor.StepActor`,
which the sub-team actor (``_team_worker.TeamWorkerActor``) shares; only
:meth:`StepActor.work` differs. This module (and the step machinery it imports)
loads once, as a team starts (``_team_actors``), not with ``Worker`` (issue #22).
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from regiment.errors import ConfigError
from regiment.hierarchy._in_flight import step_cut
from regiment.hierarchy._live_events import LiveChannel, live_sink
from regiment.hierarchy._messages import AssignStep, StepReport
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._prompts import HookFailed, Prompts
from regiment.hierarchy.guard._step import StepGuards
from regiment.hierarchy.guard._types import Guardrail, as_guardrail
from regiment.hierarchy.workers._approval_gate import ApprovalGate
from regiment.hierarchy.workers._journal_calls import RunLookup, StepCalls
from regiment.hierarchy.workers._loop import StepProgress, run_tool_loop
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.hierarchy.workers._worker import Worker, step_limits
from regiment.models import ModelSettings
from regiment.telemetry import Telemetry
from regiment.tools import WorkerTools

__all__ = ("WorkerActor",)


class WorkerActor(StepActor):
    """Runs a :class:`Worker`'s steps; one actor per worker per started team."""

    def __init__(
        self,
        worker: Worker,
        prompts: Prompts,
        telemetry: Telemetry,
        tools: WorkerTools | None = None,
        approvals: ApprovalGate | None = None,
        runs: RunLookup | None = None,
        channels: Mapping[str, LiveChannel] | None = None,
        settings: ModelSettings | None = None,
        team_guardrails: Sequence[Guardrail] = (),
    ) -> None:
        super().__init__(worker.name, telemetry, **step_limits(worker))
        self._worker = worker
        self._tools = tools if tools is not None else WorkerTools(worker.toolset)
        # Without MCP servers the tool set never changes: no need to ask for it each step.
        self._fixed_tools = None if self._tools.connections else self._tools.current()
        # And so are its definitions (a property of the set: a call a step, #22).
        self._definitions = None if self._fixed_tools is None else self._fixed_tools.definitions
        self._prompts = prompts
        self._approvals = approvals
        # The team's settings under the worker's own (Team passes them merged).
        own = worker.settings if settings is None else settings.merge(worker.settings)
        self._caller = ModelCaller(worker.model, worker.name, telemetry, own)
        self._runs = runs  # the run a step belongs to: its deps and journal
        # The team's runs in progress (one dict, filled later): streamed ones get live events.
        self._channels = {} if channels is None else channels
        own_guards = tuple(as_guardrail(g) for g in worker.guardrails)
        per_tool = {
            t: tuple(as_guardrail(g) for g in gs) for t, gs in worker.tool_guardrails.items()
        }
        self._guards = StepGuards.build(
            worker.name, (*team_guardrails, *own_guards), per_tool, telemetry
        )
        # The same for every step: made once, not once a step (run_tool_loop's ``system``).
        try:
            self._system = prompts.worker_system(
                worker=worker.name,
                description=worker.description,
                system_prompt=worker.system_prompt,
            )
        except HookFailed as exc:  # Team.start() fails saying so (see spawn_worker)
            raise ConfigError(f"worker {worker.name!r} cannot start: {exc}") from exc.__cause__

    def held_back(self, assign: AssignStep, held: bool) -> None:
        if (channel := self._channels.get(assign.run_id) if self._channels else None) is not None:
            channel.fence.top_ups.queued(
                (assign.plan_version, assign.step.id, assign.attempt), held
            )

    def work(self, assign: AssignStep, progress: StepProgress) -> Coroutine[Any, Any, StepReport]:
        """Run the worker's tool loop for the step (the step scope holds its timeout).

        A plain function returning the loop's coroutine: a step makes no coroutine of
        its own for this forwarding (#22)."""
        worker = self._worker
        run_id = assign.run_id
        channel = self._channels.get(run_id) if self._channels else None
        if channel is not None:  # the run's fence: its planner moves it as a plan ends
            progress.fence = channel.fence
        run = self._runs and self._runs(run_id)
        # a run nobody streams: no sink, and no call to find that out (issue #22)
        live = (
            live_sink(channel, run_id, worker.name)
            if channel is not None and channel.streaming
            else None
        )
        ledger = None if channel is None else channel.fence.top_ups.ledger
        # a run with no limit at all (its ledger ``free``) charges no call cut: none to ask
        free = ledger is None or ledger.free is not None
        cut = None if ledger is None or free else step_cut(ledger, assign, worker.name)
        return run_tool_loop(
            worker=worker.name,
            system=self._system,
            max_iterations=worker.max_iterations,
            # MCP tool lists may change between steps
            toolset=self._tools.current() if self._fixed_tools is None else self._fixed_tools,
            definitions=self._definitions,
            caller=self._caller,
            telemetry=self._telemetry,
            prompts=self._prompts,
            assign=assign,
            progress=progress,
            on_tool_error=worker.on_tool_error,
            approvals=self._approvals,
            # nothing to replay, journal, stream or charge if cut: the loop makes one if a
            # tool is called
            journaled=None
            if run is None and live is None and cut is None
            else StepCalls(run, assign, worker.name, live, cut),
            guards=self._guards,
        )
