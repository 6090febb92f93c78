"""What the Ray tests' replicas build: the refund story's workers with a file
ledger that records which process (and Ray node) made each side effect, and a
worker whose "hold" tool signals a probe actor and waits to be cancelled.

Everything a replica needs is named by import path (this module is importable
as ``tests.ray._ray_team`` on the Ray node: the fixture puts the repository on
its ``PYTHONPATH``), so only file paths and names cross to the replicas.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from examples.refund.brain import refund_brain
from examples.refund.team import build_team
from examples.refund.tools import Ledger, make_tools
from regiment.hierarchy import Event, Ray, StaleReportDropped, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ScriptFunction,
    text_response,
)
from regiment.models import tool_call_response as call
from regiment.tools import tool

__all__ = (
    "Probe",
    "held_worker",
    "ledger_lines",
    "ray_refund_team",
    "refund_worker",
)

DESCRIPTIONS = {
    "billing": "Checks refund eligibility, issues refunds, flags exceptions.",
    "comms": "Writes and sends e-mails to customers.",
}


def _node() -> str:
    import ray

    return str(ray.get_runtime_context().get_node_id()) if ray.is_initialized() else "local"


class _Recorded(list[Any]):
    """A ledger list whose every append is also a line in a file shared by processes."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__()
        self._path, self._kind = path, kind

    def append(self, item: Any) -> None:
        super().append(item)
        line = {"kind": self._kind, "item": item, "pid": os.getpid(), "node": _node()}
        with open(self._path, "a", encoding="utf-8") as file:
            file.write(json.dumps(line) + "\n")


def ledger_lines(path: str | Path) -> list[dict[str, Any]]:
    """Every side effect recorded in the ledger file, in order."""
    file = Path(path)
    if not file.exists():
        return []
    return [json.loads(line) for line in file.read_text().splitlines()]


def refund_worker(name: str, ledger: str) -> Worker:
    """The refund story's ``name`` worker, its side effects written to ``ledger``."""
    recorded = Ledger(
        refunds=_Recorded(ledger, "refund"),
        exceptions=_Recorded(ledger, "exception"),
        emails=_Recorded(ledger, "email"),
    )
    return Worker(
        name=name,
        description=DESCRIPTIONS[name],
        model=ScriptedModel(refund_brain),
        tools=make_tools(recorded)[name],
    )


def ray_refund_team(ledger: str, **placement: Any) -> Team:
    """The refund team with both workers on Ray, each replica building its worker."""
    local = build_team(ScriptedModel(refund_brain), Ledger())
    workers = [
        dataclasses.replace(
            w,
            placement=Ray(build=functools.partial(refund_worker, w.name, ledger), **placement),
        )
        for w in local.workers
        if isinstance(w, Worker)
    ]
    return dataclasses.replace(local, workers=workers)


class Probe:
    """A Ray actor the test and the replicas share: who started, who was cancelled."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.cancelled: list[int] = []
        self.asked: dict[str, int] = {}
        self.performed: list[str] = []
        self.calls: dict[int, str] = {}  # by the calling process: "running", "finished", "cut"
        self._started = asyncio.Event()
        self._cancelled = asyncio.Event()
        self._released = asyncio.Event()
        self._call_ended = asyncio.Event()

    async def start(self, pid: int) -> None:
        self.started.append(pid)
        self._started.set()

    async def cancel(self, pid: int) -> None:
        self.cancelled.append(pid)
        self._cancelled.set()

    async def effect(self, key: str) -> int:
        """A side effect asked for under an idempotency key: performed the first time
        only (as a payment API honouring the key would); how often it was asked."""
        self.asked[key] = self.asked.get(key, 0) + 1
        if self.asked[key] == 1:
            self.performed.append(key)
        return self.asked[key]

    async def call(self, pid: int) -> None:
        """A call a tool makes to a service, which runs until :meth:`release`: whether
        it finished or was cut (cancelled by Ray) is kept in ``calls``."""
        self.calls[pid] = "running"
        await self.start(pid)
        try:
            await self._released.wait()
        except asyncio.CancelledError:
            self.calls[pid] = "cut"
            raise
        finally:
            self._call_ended.set()
        self.calls[pid] = "finished"

    async def release(self) -> dict[int, str]:
        """Let the running :meth:`call` finish; how every call ended."""
        self._released.set()
        await self._call_ended.wait()
        return self.calls

    async def wait_started(self, count: int) -> list[int]:
        while len(self.started) < count:
            self._started.clear()
            await self._started.wait()
        return self.started

    async def wait_cancelled(self) -> list[int]:
        await self._cancelled.wait()
        return self.cancelled

    async def state(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "cancelled": self.cancelled,
            "asked": self.asked,
            "performed": self.performed,
        }


def _probe(name: str) -> Any:
    import ray

    return ray.get_actor(name)


def _hold_brain(request: ModelRequest) -> ModelResponse:
    """Call ``hold`` once for the step, then answer with what it returned."""
    last = request.messages[-1]
    if last.role == "user" and any(getattr(p, "call_id", None) for p in last.parts):
        return text_response(f"held: {getattr(last.parts[0], 'content', '')}")
    return call("hold", {"order_id": "88213"})


def held_worker(
    probe: str,
    *,
    commit_first: bool = False,
    calls: bool = False,
    name: str = "holder",
    max_concurrent_steps: int = 8,
    ignores: bool = False,
) -> Worker:
    """A worker whose ``hold`` tool tells ``probe`` it started, then waits until it is
    cancelled (telling ``probe`` so). With ``commit_first``, it first records its side
    effect under its idempotency key (once per key, however often it is called). With
    ``calls``, it waits in a call to ``probe`` (:meth:`Probe.call`) instead. With
    ``ignores``, its first call ignores the cancel (shields its wait): only a kill
    ends it (or, with ``calls``, the probe's release); later calls return at once."""

    @tool(idempotency_key=("order_id",))
    async def hold(order_id: str) -> str:
        """Hold the order (waits until cancelled)."""
        actor = _probe(probe)
        if commit_first and await actor.effect.remote(f"hold:order_id={order_id}") > 1:
            return "already held"  # a retry of a call whose effect is done: nothing to wait for
        if ignores and await actor.effect.remote("ignored") > 1:
            return "held at once"  # only the first call ignores its cancel
        try:
            # Inside the try: the test sees the start (the probe has run it) and may
            # cancel while this await still waits for its reply; the cancel must be told.
            with anyio.CancelScope(shield=ignores):
                if calls:
                    await actor.call.remote(os.getpid())
                else:
                    await actor.start.remote(os.getpid())
                    await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await actor.cancel.remote(os.getpid())
        return "unreachable"

    return Worker(
        name=name,
        description="Holds orders.",
        model=ScriptedModel(_hold_brain),
        tools=[hold],
        max_concurrent_steps=max_concurrent_steps,
    )


def plan_text(*steps: dict[str, Any]) -> str:
    """A planner reply with these steps (``depends_on`` defaults to none)."""
    return json.dumps({"steps": [{"depends_on": [], **s} for s in steps]})


def holder_team(
    probe: str,
    planner: list[str] | ScriptFunction,
    *,
    commit_first: bool = False,
    calls: bool = False,
    ignores: bool = False,
    **placement: Any,
) -> Team:
    """A team with the Ray-placed ``holder`` and an in-process ``local`` worker whose
    steps wait until the holder's tool has started on its replica."""
    from regiment.hierarchy import Check, Planner

    async def local_brain(request: ModelRequest) -> str:
        await _probe(probe).wait_started.remote(1)
        return "probed: the order is not what it seemed"

    build = functools.partial(
        held_worker, probe, commit_first=commit_first, calls=calls, ignores=ignores
    )
    holder = dataclasses.replace(build(), placement=Ray(build=build, **placement))
    local = Worker(name="local", description="Probes orders.", model=ScriptedModel(local_brain))
    return Team(
        name="holding",
        planner=Planner(model=ScriptedModel(planner)),
        workers=[holder, local],
        checks={"fails": Check(description="never passes", predicate=lambda report: False)},
    )


def _where_brain(request: ModelRequest) -> ModelResponse:
    """Plan one step for ``where``; there, call ``whereami`` and answer with its result."""
    if request.role in ("planner", "replanner"):
        step = {"id": "s1", "description": "Say where you run", "worker": "where"}
        return text_response(plan_text(step))
    if request.role == "synthesizer":
        return text_response("done")
    last = request.messages[-1]
    if last.role == "user" and any(getattr(p, "call_id", None) for p in last.parts):
        return text_response(str(getattr(last.parts[0], "content", "")))
    return call("whereami", {})


@tool
def whereami() -> str:
    """The process and Ray node this tool runs in."""
    return f"{os.getpid()}@{_node()}"


def where_worker() -> Worker:
    """A worker that reports the process and node it runs in."""
    return Worker(
        name="where",
        description="Says where it runs.",
        model=ScriptedModel(_where_brain),
        tools=[whereami],
    )


def where_team(**placement: Any) -> Team:
    """A one-step team whose only worker is on Ray (build: :func:`where_worker`)."""
    from regiment.hierarchy import Planner

    worker = dataclasses.replace(where_worker(), placement=Ray(build=where_worker, **placement))
    return Team(name="where", planner=Planner(model=ScriptedModel(_where_brain)), workers=[worker])


def pooled_holders(probe: str, steps_each: int, **placement: Any) -> Team:
    """Two holders, ``hold_a`` and ``hold_b``, in one Ray pool, each running up to
    ``steps_each`` steps at once; the plan gives each that many steps to hold."""
    from regiment.hierarchy import Planner

    workers = []
    for name in ("hold_a", "hold_b"):
        build = functools.partial(held_worker, probe, name=name, max_concurrent_steps=steps_each)
        workers.append(dataclasses.replace(build(), placement=Ray(build=build, **placement)))
    steps = [
        {"id": f"{w.name}-{i}", "description": "Hold order 88213", "worker": w.name}
        for w in workers
        for i in range(steps_each)
    ]
    return Team(
        name="pooled",
        planner=Planner(model=ScriptedModel([plan_text(*steps)])),
        workers=workers,
        concurrency=2 * steps_each,
    )


class DropWaitingPlanner:
    """A planner that plans ``plans`` in turn and answers only once the run has dropped
    a stale report: a cancelled step's report comes back after the step has ended
    where it ran (its tool's cleanup included), so a run that must show the drop
    waits for it instead of racing it."""

    def __init__(self, *plans: str) -> None:
        self._plans = iter(plans)
        self.dropped = anyio.Event()

    async def __call__(self, request: ModelRequest) -> str:
        if request.role == "synthesizer":
            await self.dropped.wait()
            return "final answer"
        return next(self._plans)

    async def run(
        self, team: Team, goal: str, then: Callable[[], Awaitable[object]] | None = None
    ) -> list[Event]:
        """Stream ``team`` on ``goal`` (its planner being this one); every event.
        ``then`` is awaited after the run, while the team (and its replicas) still live."""
        seen: list[Event] = []
        async with team.start() as running:
            async with running.stream(goal) as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, StaleReportDropped):
                        self.dropped.set()
            if then is not None:
                await then()
        return seen
