"""A traced, journaled run in a process of its own, for tests/telemetry/test_crash_trace.py.

``python _crash_child.py JOURNAL ENDPOINT STOP [RUN_ID SHIFT] [--parent TRACEPARENT]
[--nested]``:
without ``RUN_ID`` it starts the run (under the remote span ``TRACEPARENT`` names, if
given), else it resumes run ``RUN_ID`` with the journal's clock ``SHIFT`` seconds ahead
(so the lease of a killed process has run out). It prints ``run <id>``; at the first model
call of step ``STOP`` (``s1``, ``s2``; ``s1+``, ``s2+``: its second, after its tool call;
``s1!``, ``s2!``: inside its tool call, once the tool's body ended a span of its own;
``none``: never) it waits until the journal holds what it did (the step's dispatch, every
earlier step's report: as it does within a second, ``COMMIT_WAIT``), exports every span it
has ended to ``ENDPOINT`` (the real OTLP exporter), prints ``ready`` and waits to be
killed; else it prints ``finished <status>`` and exports the rest. With ``--nested`` the
steps are a nested team's (``inner``): the run's one step, ``o1``, is its worker ``desk``'s;
with ``--no-flush`` it exports nothing itself at ``STOP``: the batch processor does, on its
own schedule (``OTEL_BSP_SCHEDULE_DELAY``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext

import anyio
from opentelemetry.trace import Tracer

from regiment.hierarchy import Planner, Team, TeamWorker, Worker
from regiment.hierarchy.events import RunStarted
from regiment.journal import (
    Journal,
    RunCreated,
    RunResumed,
    StepDispatched,
    StepReported,
    nested_run_id,
    open_journal,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry, TracingHandle, configure_tracing, joined_trace
from regiment.tools import tool

PLAN = {
    "steps": [
        {"id": "s1", "description": "look order 1 up"},
        {"id": "s2", "description": "look order 2 up", "depends_on": ["s1"]},
    ]
}


# Set by main: the stop and the stop point, and the tracer of the tool body's own spans.
INSIDE: list[tuple[str, Callable[[str], Awaitable[None]], Tracer]] = []


@tool
async def look_up(order: str) -> str:
    """Look an order up."""
    at, stop, tracer = INSIDE[0]
    if at == f"s{order}!":  # inside the call: a span of the body's own has ended in it
        with tracer.start_as_current_span("SELECT orders"):
            pass
        await stop(f"s{order}")
    return f"order {order}: shipped"


def _brain(
    stop: Callable[[str], Awaitable[None]], at: str
) -> Callable[[ModelRequest], Awaitable[ModelResponse]]:
    async def reply(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            return text_response(json.dumps(PLAN))
        if request.role == "synthesizer":
            return text_response("both orders shipped")
        first = request.messages[0].text
        step = "s1" if "(s1)" in first else "s2"
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            if step == at:
                await stop(step)
            return tool_call_response("look_up", {"order": step[1]})
        if f"{step}+" == at:
            await stop(step)
        return text_response(f"{step}: {results[0].content}")

    return reply


OUTER = {"steps": [{"id": "o1", "description": "look both orders up", "worker": "desk"}]}


async def caught_up(where: str, steps: list[tuple[str, str]]) -> None:
    """Until the journal holds, for each ``(run id, step)``, of this process's holding of
    the run, the dispatch of the step and a report of every other step it dispatched
    (polled: a run commits them within ``COMMIT_WAIT``)."""
    journal = await open_journal(where)
    try:
        while True:  # another process's commits: nothing here to wait on but the file
            if all([await _holds(journal, run_id, step) for run_id, step in steps]):
                return
            await anyio.sleep(0.05)
    finally:
        await journal.close()


async def _holds(journal: Journal, run_id: str, step: str) -> bool:
    records = [entry.record for entry in await journal.read(run_id)]
    took = [i for i, r in enumerate(records) if isinstance(r, RunCreated | RunResumed)]
    mine = records[took[-1] :] if took else []
    sent = {r.step_id for r in mine if isinstance(r, StepDispatched)}
    reported = {r.step_id for r in mine if isinstance(r, StepReported)}
    return step in sent and sent - {step} <= reported


def _team(
    handle: TracingHandle, stop: Callable[[str], Awaitable[None]], at: str, nested: bool
) -> Team:
    model = ScriptedModel(_brain(stop, at))
    worker = Worker(name="clerk", description="looks orders up", model=model, tools=[look_up])
    telemetry = Telemetry(handle.provider)
    if not nested:
        return Team(
            name="crashers", planner=Planner(model=model), workers=[worker], telemetry=telemetry
        )
    inner = Team(name="inner", planner=Planner(model=model), workers=[worker], telemetry=telemetry)
    desk = TeamWorker(name="desk", description="a team that looks orders up", team=inner)
    outer = ScriptedModel(_outer)
    return Team(name="crashers", planner=Planner(model=outer), workers=[desk], telemetry=telemetry)


async def _outer(request: ModelRequest) -> ModelResponse:
    if request.role == "planner":
        return text_response(json.dumps(OUTER))
    return text_response("both orders shipped")


async def main(*argv: str) -> None:
    where, endpoint, at, *rest = argv
    parent = rest[rest.index("--parent") + 1] if "--parent" in rest else None
    resume = rest[:2] if rest and not rest[0].startswith("--") else ()
    nested = "--nested" in rest
    handle = configure_tracing("crash-child", endpoint=endpoint, set_global=False)

    run: list[str] = [rest[0]] if resume else []

    async def stop(step: str) -> None:
        inner = nested_run_id(run[0], 1, "o1")
        await caught_up(where, [(run[0], "o1"), (inner, step)] if nested else [(run[0], step)])
        if "--no-flush" not in rest:  # else the batch processor sends them when it does
            handle.force_flush()  # what this process has ended is at the receiver
        print("ready", flush=True)
        await anyio.sleep_forever()

    INSIDE.append((at, stop, handle.provider.get_tracer("orders")))
    team = _team(handle, stop, at, nested)
    if resume:
        run_id, shift = resume[0], float(resume[1])
        journal = await open_journal(where, clock=lambda: time.time() + shift)
        print("run", run_id, flush=True)
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id)
        await journal.close()
        status = result.status
    else:
        caller = nullcontext() if parent is None else joined_trace({"traceparent": parent})
        with caller:  # the run's root span: a child of the caller's
            async with (
                team.start(journal=where) as running,
                running.stream("look both orders up") as events,
            ):
                async for event in events:
                    if isinstance(event, RunStarted):
                        run.append(event.run_id)
                        print("run", event.run_id, flush=True)
            status = "completed"
    handle.shutdown()
    print("finished", status, flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
