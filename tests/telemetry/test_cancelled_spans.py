"""Every span a cancellation ends reads the same in the exported trace: ``regiment.cancelled``
and its event, the status unset, no ``exception`` event (decoded from real OTLP)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import pytest

from regiment.hierarchy import (
    ApprovalRequested,
    Check,
    Compression,
    Critic,
    Pass,
    Planner,
    PlanSubject,
    RequestSubject,
    Team,
    TeamWorker,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import Tool, tool

from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio

Reply = ModelResponse | str
Answer = Callable[[ModelRequest], Awaitable[Reply]]


@dataclass
class Hold:
    """Work that never ends; ``reached`` is set once it is under way."""

    reached: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, *_: object) -> Reply:
        self.reached.set()
        await anyio.Event().wait()
        raise AssertionError("unreachable")


def _plan(*steps: dict[str, object]) -> str:
    return json.dumps({"steps": list(steps)})


def _brain(roles: dict[str, Answer]) -> Callable[[ModelRequest], Awaitable[Reply]]:
    async def brain(request: ModelRequest) -> Reply:
        answer = roles.get(request.role or "")
        if answer is not None:
            return await answer(request)
        defaults = {"planner": _plan({"id": "s1", "description": "do it"}), "critic": "{}"}
        return defaults.get(request.role or "", text_response("done"))

    return brain


def _team(telemetry: Telemetry | None, roles: dict[str, Answer], **options: object) -> Team:
    model = ScriptedModel(_brain(roles))
    tools: list[Tool[..., object]] = options.pop("tools", [])  # type: ignore[assignment]
    worker = Worker(name="w", description="w", model=model, tools=tools)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=options.pop("workers", [worker]),  # type: ignore[arg-type]
        telemetry=telemetry,
        **options,  # type: ignore[arg-type]
    )


def _calls(tool_name: str) -> Answer:
    """A worker that calls ``tool_name`` once, then answers."""

    async def answer(request: ModelRequest) -> Reply:
        if any(isinstance(p, ToolResultPart) for p in request.messages[-1].parts):
            return text_response("done")
        return tool_call_response(tool_name, {"x": "a"})

    return answer


def _case_plan_guard(hold: Hold) -> Team:
    async def guard(plan: PlanSubject) -> Pass:
        await hold()
        return Pass()

    return _team(None, {}, guardrails=[guard])


def _case_request_guard(hold: Hold) -> Team:
    async def guard(request: RequestSubject) -> Pass:
        if request.role == "worker":
            await hold()
        return Pass()

    return _team(None, {}, guardrails=[guard])


def _case_worker_chat(hold: Hold) -> Team:
    return _team(None, {"worker": hold})


def _case_tool(hold: Hold) -> Team:
    @tool
    async def slow(x: str) -> str:
        """Never answers."""
        await hold()
        return x

    return _team(None, {"worker": _calls("slow")}, tools=[slow])


def _case_critic(hold: Hold) -> Team:
    return _team(None, {"critic": hold}, critic=Critic())


def _case_synthesis(hold: Hold) -> Team:
    return _team(None, {"synthesizer": hold})


def _case_compression(hold: Hold) -> Team:
    verdicts = iter(['{"passed": false, "feedback": "more"}', '{"passed": true}'])

    async def critic(request: ModelRequest) -> Reply:
        return next(verdicts)

    roles: dict[str, Answer] = {"compressor": hold, "critic": critic}
    return _team(None, roles, critic=Critic(), compression=Compression(threshold_tokens=1))


def _case_nested(hold: Hold) -> Team:
    child = _team(None, {"worker": hold})
    parent = TeamWorker(name="w", description="a team", team=child)
    return _team(None, {}, workers=[parent])


# Each case: the team, and the spans open when its run is cancelled (besides the run's).
CASES: dict[str, tuple[Callable[[Hold], Team], set[str]]] = {
    "plan guard": (_case_plan_guard, {"regiment.guardrail"}),
    "request guard": (_case_request_guard, {"regiment.guardrail", "invoke_agent w"}),
    "worker chat": (_case_worker_chat, {"chat scripted", "invoke_agent w"}),
    "tool": (_case_tool, {"execute_tool slow", "invoke_agent w"}),
    "critic": (_case_critic, {"chat scripted", "critique"}),
    "synthesis": (_case_synthesis, {"chat scripted", "synthesize"}),
    "compression": (_case_compression, {"chat scripted", "compress"}),
    "nested team": (_case_nested, {"chat scripted", "invoke_agent w", "invoke_agent t"}),
}


async def _traced(
    build: Callable[[Telemetry], Team], go: Callable[[Team], Awaitable[None]]
) -> tuple[ReceivedSpan, ...]:
    """The spans of what ``go`` does with the team ``build`` makes, as exported."""
    with OtlpReceiver() as receiver:
        handle = configure_tracing("cancel", endpoint=receiver.endpoint, set_global=False)
        await go(build(Telemetry(handle.provider)))
        handle.shutdown()
        return receiver.spans()


def _reads_cancelled(span: ReceivedSpan) -> bool:
    return (
        span.attributes.get("regiment.cancelled") is True
        and span.status_code == 0
        and "error.type" not in span.attributes
        and [name for name, _ in span.events if name != "regiment.approval.requested"]
        == ["regiment.cancelled"]
    )


def _cancel_reason(span: ReceivedSpan) -> object:
    (event,) = [attributes for name, attributes in span.events if name == "regiment.cancelled"]
    return event.get("regiment.cancel.reason")


@pytest.mark.parametrize("case", sorted(CASES))
async def test_every_span_a_cancelled_run_cut_short_reads_cancelled(case: str) -> None:
    build, open_ones = CASES[case]
    hold = Hold()

    async def go(team: Team) -> None:
        async with team.start() as running, anyio.create_task_group() as tg:
            tg.start_soon(running.run, "go")
            await hold.reached.wait()
            tg.cancel_scope.cancel()

    spans = await _traced(lambda t: dataclasses.replace(build(hold), telemetry=t), go)
    cancelled = {s.name for s in spans if s.attributes.get("regiment.cancelled")}
    # The nested team's root is `invoke_agent t` too: both roots were cut short.
    assert cancelled == open_ones | {"invoke_agent t"}, case
    for span in spans:
        if span.attributes.get("regiment.cancelled"):
            assert _reads_cancelled(span), span
        else:  # finished before the cancel
            assert span.status_code == 0, span
            assert not span.events, span
    for step in (
        s for s in spans if s.name == "invoke_agent w" and s.attributes.get("regiment.step.id")
    ):
        assert step.attributes["regiment.step.outcome"] in ("cancelled", "done"), step
        if step.attributes["regiment.step.outcome"] == "cancelled":
            assert _cancel_reason(step) == "the run is ending", step


async def test_a_step_a_replan_cancelled_reads_cancelled() -> None:
    # s1 fails its check while s2 is in a tool call: the replan cancels s2, whose
    # report says `cancelled`, so no cancellation left its span (it had no marker).
    hold = Hold()
    plans = iter(
        [
            _plan(
                {"id": "s1", "description": "one", "check": "no"},
                {"id": "s2", "description": "two"},
            ),
            _plan({"id": "s3", "description": "three"}),
        ]
    )

    @tool
    async def slow(x: str) -> str:
        """Never answers."""
        await hold()
        return x

    async def planner(request: ModelRequest) -> Reply:
        return next(plans)

    async def worker(request: ModelRequest) -> Reply:
        if request.step_id == "s2":
            return await _calls("slow")(request)
        if request.step_id == "s1":
            await hold.reached.wait()  # s2 is in its tool call
        return text_response("done")

    def build(telemetry: Telemetry) -> Team:
        never = Check(description="never passes", predicate=lambda report: False)
        roles: dict[str, Answer] = {"planner": planner, "worker": worker}
        return _team(telemetry, roles, tools=[slow], checks={"no": never})

    async def go(team: Team) -> None:
        assert (await team.run("go")).status == "completed"

    spans = await _traced(build, go)
    s2 = next(s for s in spans if s.attributes.get("regiment.step.id") == "s2")
    assert s2.attributes["regiment.step.outcome"] == "cancelled"
    assert _reads_cancelled(s2), s2
    # why, which a reader could not tell from a step the caller's cancel cut short
    assert _cancel_reason(s2) == "plan v1 is being replaced"
    assert _reads_cancelled(next(s for s in spans if s.name == "execute_tool slow"))
    root = next(s for s in spans if s.name == "invoke_agent t")
    assert "regiment.cancelled" not in root.attributes  # the run itself went on


async def test_an_approval_wait_cut_short_reads_cancelled() -> None:
    # s1's call waits on the desk while s2 is busy (so the run does not pause);
    # the run is cancelled: the wait's span was left with no marker at all.
    hold = Hold()

    @tool(requires_approval=True)
    def pay(x: str) -> str:
        """Pay."""
        return x

    async def worker(request: ModelRequest) -> Reply:
        if request.step_id == "s2":
            return await hold()
        return await _calls("pay")(request)

    async def planner(request: ModelRequest) -> Reply:
        return _plan({"id": "s1", "description": "pay"}, {"id": "s2", "description": "wait"})

    async def go(team: Team) -> None:
        async with team.start() as running, running.stream("go") as events:
            async for event in events:
                if isinstance(event, ApprovalRequested):
                    break
            await hold.reached.wait()

    roles: dict[str, Answer] = {"planner": planner, "worker": worker}
    spans = await _traced(lambda t: _team(t, roles, tools=[pay]), go)
    wait = next(s for s in spans if s.name == "regiment.approval")
    assert _reads_cancelled(wait), wait
    assert wait.attributes["gen_ai.tool.name"] == "pay"
    assert isinstance(wait.attributes["regiment.approval.wait_s"], float)
    assert "regiment.approval.decision" not in wait.attributes  # none was made
    call = next(s for s in spans if s.name == "execute_tool pay")
    assert call.attributes["regiment.tool.outcome"] == "awaiting_approval"  # it never ran
    assert _reads_cancelled(call), call  # cancelled, not paused: not only awaiting


async def _paused_run_spans() -> tuple[ReceivedSpan, ...]:
    """The spans of a run that pauses on its one step's call of ``pay``."""

    @tool(requires_approval=True)
    def pay(x: str) -> str:
        """Pay."""
        return x

    async def go(team: Team) -> None:
        assert (await team.run("go")).status == "paused"

    roles: dict[str, Answer] = {"worker": _calls("pay")}
    return await _traced(lambda t: _team(t, roles, tools=[pay]), go)


async def test_a_paused_runs_waiting_call_reads_awaiting_approval() -> None:
    # As its ToolCallFinished event says: the span said only `cancelled`, which read
    # as if the payment had been called off.
    spans = await _paused_run_spans()
    call = next(s for s in spans if s.name == "execute_tool pay")
    assert call.attributes["regiment.tool.outcome"] == "awaiting_approval"
    assert call.status_code == 0
    root = next(s for s in spans if s.name == "invoke_agent t")
    assert root.attributes["regiment.run.status"] == "paused"
    assert "regiment.cancelled" not in root.attributes


async def test_a_paused_runs_step_reads_awaiting_approval_not_cancelled() -> None:
    # Its step span read `cancelled` (with the cancelled event) while its tool call's
    # read `awaiting_approval`: the step was not called off, it waits for a decision.
    spans = await _paused_run_spans()
    step = next(s for s in spans if s.name == "invoke_agent w")
    assert step.attributes["regiment.step.outcome"] == "awaiting_approval"
    assert "regiment.cancelled" not in step.attributes
    assert (step.status_code, step.events) == (0, ())
    assert "error.type" not in step.attributes
