"""Rule-based model scripts for hierarchy tests: a planner that replies from a
list, workers that answer from their step text, and a synthesizer."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from regiment.hierarchy import Budget, JournaledEvents, Planner, RunningTeam, Team, Worker
from regiment.hierarchy.events import Event
from regiment.journal import Journal
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    ToolResultPart,
    Usage,
    text_response,
    tool_call_response,
)
from regiment.tools import Tool, tool

WorkFn = Callable[[str, list[ToolResultPart], ModelRequest], Awaitable[ModelResponse | str]]


def step_of(request: ModelRequest) -> tuple[str, str]:
    """The (id, description) of the step a worker request hands over."""
    first = "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))
    match = re.search(r"Your step \((\w+)\): (.*)", first)
    assert match is not None, first
    return match.group(1), match.group(2)


def tool_results(request: ModelRequest) -> list[ToolResultPart]:
    last = request.messages[-1]
    return [p for p in last.parts if isinstance(p, ToolResultPart)] if last.role == "user" else []


def plan_json(*steps: Mapping[str, object]) -> str:
    return json.dumps({"steps": list(steps)})


class Overlap:
    """A worker script that holds each step until ``together`` steps are in
    flight at once, and records the most that ever were."""

    def __init__(self, together: int) -> None:
        self.together = together
        self.in_flight = 0
        self.peak = 0
        self._all_in = anyio.Event()

    async def __call__(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight == self.together:
            self._all_in.set()
        await self._all_in.wait()  # no step finishes before the others have started
        self.in_flight -= 1
        return f"did: {description}"


class Hang:
    """A worker script that never answers: it records that a step started and,
    when the step is cancelled, which step it was."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled: list[str] = []

    async def __call__(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        self.started.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(description)
            raise
        raise AssertionError("unreachable")


async def _echo(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
    return f"did: {description}"


@dataclass
class Brain:
    """One model for every role of a test team."""

    plans: Sequence[str]
    work: WorkFn = _echo
    synthesis: str = "final answer"
    plan_requests: list[ModelRequest] = field(default_factory=list)
    worker_requests: list[ModelRequest] = field(default_factory=list)
    synthesis_requests: list[ModelRequest] = field(default_factory=list)

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            self.plan_requests.append(request)
            index = len(self.plan_requests) - 1
            assert index < len(self.plans), (
                f"planner called {index + 1} times, only {len(self.plans)} replies scripted"
            )
            return self.plans[index]
        if request.role == "worker":
            self.worker_requests.append(request)
            _, description = step_of(request)
            return await self.work(description, tool_results(request), request)
        if request.role == "synthesizer":
            self.synthesis_requests.append(request)
            return text_response(self.synthesis)
        raise AssertionError(f"unknown role: {request.role!r}")


class PerGoalBrain(Brain):
    """A ``Brain`` that plans by goal: each planner call gets the plan of the goal its
    request names (``plans_by_goal``: goal text -> plan reply), so runs can share a team."""

    def __init__(self, plans_by_goal: dict[str, str], work: WorkFn = _echo) -> None:
        super().__init__([], work=work)
        self.plans_by_goal = plans_by_goal

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            text = getattr(request.messages[0].parts[0], "text", "")
            return next(plan for goal, plan in self.plans_by_goal.items() if goal in text)
        return await super().__call__(request)


THREE_STEPS = plan_json(
    {"description": "break", "worker": "w"},
    {"description": "wait b", "worker": "w"},
    {"description": "wait c", "worker": "w"},
)
SPENT = Usage(input_tokens=100, output_tokens=10)  # each waiting sibling's one model call


class Siblings:
    """Worker script: the ``wait`` steps make one model call (``SPENT``) that calls a
    tool that never returns; the ``break`` step raises ``error`` once both wait."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.waiting = 0
        self.both_wait = anyio.Event()
        self.stopped = 0  # waits cancelled
        self.both_stopped = anyio.Event()

    async def work(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description.startswith("wait"):
            return tool_call_response("wait", {}, usage=SPENT)
        await self.both_wait.wait()
        error = self.error
        if error is None:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")
        raise error

    def tool(self) -> Tool[[], Awaitable[str]]:
        @tool
        async def wait() -> str:
            """Wait for something that never comes."""
            self.waiting += 1
            if self.waiting == 2:
                self.both_wait.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.stopped += 1
                if self.stopped == 2:
                    self.both_stopped.set()
            return "never"

        return wait


def siblings_team(siblings: Siblings, budget: Budget) -> Team:
    """A one-worker team that plans ``THREE_STEPS`` and works as ``siblings`` says."""
    model = ScriptedModel(Brain([THREE_STEPS], work=siblings.work))
    worker = Worker(name="w", description="Works.", model=model, tools=[siblings.tool()])
    return Team(name="t", planner=Planner(model=model), workers=[worker], budget=budget)


async def left_early(
    running: RunningTeam, journal: Journal, goal: str, busy: anyio.Event
) -> list[Event]:
    """A journaled run's events, as journaled, after its reader left at the first event
    once ``busy`` (its steps are at work) was set: the caller left, the run was cancelled."""
    async with running.stream(goal) as stream:
        async for event in stream:
            run_id = event.run_id
            break
        await busy.wait()
    return list((await JournaledEvents.read(journal, run_id)).events)


async def all_blocked(backend: str) -> None:
    """``anyio.wait_all_tasks_blocked``, which on asyncio re-checks only every 0.1 s (most of
    the asyncio time of the property tests that wait for it between their steps). Here the
    same check (every other task waits on a future not yet done) is made after each pass
    of the event loop; on trio, anyio's own."""
    if backend != "asyncio":
        await anyio.wait_all_tasks_blocked()
        return
    this = asyncio.current_task()
    while True:
        await asyncio.sleep(0)
        waiting = (t._fut_waiter for t in asyncio.all_tasks() if t is not this)  # type: ignore[attr-defined]
        if all(w is not None and not w.done() for w in waiting):
            return
