"""Guardrails inside a worker's step: around model calls and tool calls, every
outcome, both ``on_trip`` modes, chains, sync and async guards, per team, worker
and tool."""

from __future__ import annotations

import asyncio
import dataclasses

import anyio
import pytest

from regiment.errors import ConfigError, StepFailed
from regiment.hierarchy import (
    Budget,
    Event,
    GuardrailRewrote,
    GuardrailTripped,
    Planner,
    RunCompleted,
    RunFailed,
    RunResult,
    Team,
    Worker,
)
from regiment.hierarchy.guard import (
    GuardLike,
    Guardrail,
    Outcome,
    Pass,
    ReplySubject,
    RequestSubject,
    Rewrite,
    ToolCallSubject,
    ToolResultSubject,
    Trip,
    guardrail,
)
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Till:
    """A refund tool that records what it was asked to do."""

    refunds: list[int] = dataclasses.field(default_factory=list)

    def tools(self) -> list[object]:
        @tool
        def issue_refund(order_id: int) -> dict[str, object]:
            """Refund an order."""
            self.refunds.append(order_id)
            return {"order_id": order_id, "status": "refunded"}

        @tool
        def lookup(order_id: int) -> str:
            """Look an order up."""
            return f"order {order_id}: 40 EUR"

        return [issue_refund, lookup]


async def refund_then_report(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if not results:
        return tool_call_response("issue_refund", {"order_id": 7}, call_id="c1")
    return f"tool said: {results[0].content} (error={results[0].is_error})"


def make_team(
    till: Till,
    brain: Brain,
    *,
    team_guards: list[GuardLike] | None = None,
    worker_guards: list[GuardLike] | None = None,
    tool_guards: dict[str, list[GuardLike]] | None = None,
    step_timeout: float | None = None,
) -> Team:
    model = ScriptedModel(brain)
    worker = Worker(
        name="billing",
        description="refunds",
        model=model,
        tools=till.tools(),  # type: ignore[arg-type]
        guardrails=worker_guards or [],
        tool_guardrails=tool_guards or {},
        **({} if step_timeout is None else {"step_timeout": step_timeout}),  # type: ignore[arg-type]
    )
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[worker],
        budget=Budget(replans=0),
        guardrails=team_guards or [],
    )


async def run(team: Team) -> tuple[RunResult | RunFailed, list[Event]]:
    """The run's result (or its ``RunFailed``) and every event it emitted."""
    async with team.start() as running, running.stream("refund order 7") as events:
        seen = [event async for event in events]
    last = seen[-1]
    if isinstance(last, RunCompleted):
        return last.result, seen
    assert isinstance(last, RunFailed)
    return last, seen


def failed_step(outcome: RunResult | RunFailed) -> str:
    assert isinstance(outcome, RunFailed)
    assert outcome.error_type == StepFailed.__name__
    return outcome.message


def brain() -> Brain:
    return Brain([plan_json({"description": "refund order 7"})], work=refund_then_report)


def trips(seen: list[Event]) -> list[GuardrailTripped]:
    return [e for e in seen if isinstance(e, GuardrailTripped)]


def no_refunds(subject: ToolCallSubject) -> Outcome:
    if subject.tool == "issue_refund":
        return Trip("refunds need a human")
    return Pass()


async def test_a_tool_call_trip_fails_the_step_and_the_tool_never_runs() -> None:
    till = Till()
    outcome, seen = await run(make_team(till, brain(), worker_guards=[no_refunds]))
    message = failed_step(outcome)
    assert "guardrail 'no_refunds' tripped on the tool call: refunds need a human" in message
    assert till.refunds == []
    (trip,) = trips(seen)
    assert (trip.guardrail, trip.subject, trip.reason) == (
        "no_refunds",
        "tool_call",
        "refunds need a human",
    )
    assert (trip.worker, trip.step_id) == ("billing", "s1")


async def test_tell_model_gives_the_reason_as_the_tools_error_result() -> None:
    till, b = Till(), brain()
    guard = Guardrail(no_refunds, "tool_call", on_trip="tell_model")
    outcome, seen = await run(make_team(till, b, worker_guards=[guard]))
    assert isinstance(outcome, RunResult)
    assert outcome.status == "completed"
    assert till.refunds == []
    (step,) = outcome.steps
    assert step.output == (
        "tool said: not run: guardrail 'no_refunds' refused this call: "
        "refunds need a human (error=True)"
    )
    assert len(trips(seen)) == 1


async def test_a_tool_call_rewrite_changes_the_arguments_the_tool_gets() -> None:
    till = Till()

    @guardrail("tool_call", name="other_order")
    async def other_order(subject: ToolCallSubject) -> Outcome:
        await anyio.lowlevel.checkpoint()
        return Rewrite(dataclasses.replace(subject, arguments={"order_id": 8}))

    outcome, seen = await run(make_team(till, brain(), tool_guards={"issue_refund": [other_order]}))
    assert isinstance(outcome, RunResult)
    assert till.refunds == [8]
    rewrote = [e for e in seen if isinstance(e, GuardrailRewrote)]
    assert [(e.guardrail, e.subject, e.worker) for e in rewrote] == [
        ("other_order", "tool_call", "billing")
    ]


async def test_tool_result_guards_chain_each_rewrite_feeding_the_next() -> None:
    seen_by_second: list[object] = []

    def mark(subject: ToolResultSubject) -> Outcome:
        assert isinstance(subject.content, dict)
        return Rewrite(dataclasses.replace(subject, content={**subject.content, "marked": 1}))

    async def check(subject: ToolResultSubject) -> Outcome:
        seen_by_second.append(subject.content)
        return Rewrite(dataclasses.replace(subject, content="ok"))

    outcome, seen = await run(make_team(Till(), brain(), team_guards=[mark, check]))
    assert isinstance(outcome, RunResult)
    assert seen_by_second == [{"order_id": 7, "status": "refunded", "marked": 1}]
    assert outcome.steps[0].output == "tool said: ok (error=False)"
    assert len([e for e in seen if isinstance(e, GuardrailRewrote)]) == 2


async def test_a_tool_result_trip_withholds_or_fails() -> None:
    def refuse(subject: ToolResultSubject) -> Outcome:
        return Trip("no amounts")

    told = Guardrail(refuse, "tool_result", on_trip="tell_model")
    outcome, _ = await run(make_team(Till(), brain(), worker_guards=[told]))
    assert isinstance(outcome, RunResult)
    assert outcome.steps[0].output == (
        "tool said: result withheld by guardrail 'refuse': no amounts (error=True)"
    )
    failed, seen = await run(make_team(Till(), brain(), worker_guards=[refuse]))
    failed_step(failed)
    assert trips(seen)[0].subject == "tool_result"


async def test_per_tool_guards_leave_other_tools_alone() -> None:
    async def lookup_then_answer(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("lookup", {"order_id": 7}, call_id="c1")
        return f"tool said: {results[0].content}"

    b = Brain([plan_json({"description": "look order 7 up"})], work=lookup_then_answer)
    outcome, seen = await run(make_team(Till(), b, tool_guards={"issue_refund": [no_refunds]}))
    assert isinstance(outcome, RunResult)
    assert outcome.steps[0].output == "tool said: order 7: 40 EUR"
    assert trips(seen) == []


async def test_a_model_request_rewrite_reaches_the_model() -> None:
    def sign(subject: RequestSubject) -> Outcome:
        first, *rest = subject.messages
        signed = Message(role="user", parts=(TextPart(text=first.text + "\n(checked)"),))
        return Rewrite(dataclasses.replace(subject, messages=(signed, *rest)))

    b = brain()
    outcome, _ = await run(make_team(Till(), b, worker_guards=[sign]))
    assert isinstance(outcome, RunResult)
    assert len(b.worker_requests) == 2
    assert all(r.messages[0].text.endswith("\n(checked)") for r in b.worker_requests)


async def test_a_guard_that_raises_trips_with_the_exception_type() -> None:
    def broken(subject: RequestSubject) -> Outcome:
        raise KeyError("oops")

    b = brain()
    outcome, seen = await run(make_team(Till(), b, worker_guards=[broken]))
    failed_step(outcome)
    (trip,) = trips(seen)
    assert (trip.subject, trip.reason) == ("model_request", "KeyError")
    assert b.worker_requests == []  # the model was never called


@pytest.mark.parametrize("raised", [asyncio.CancelledError, GeneratorExit])
async def test_a_guard_that_raises_a_base_exception_trips_like_one_that_raises_an_error(
    raised: type[BaseException],
) -> None:
    # Was the worker's end on asyncio (every later run: ActorStopped), or the team's on trio.
    def broken(subject: RequestSubject) -> Outcome:
        raise raised

    b = brain()
    outcome, seen = await run(make_team(Till(), b, worker_guards=[broken]))
    failed_step(outcome)
    (trip,) = trips(seen)
    assert (trip.subject, trip.reason) == ("model_request", raised.__name__)


async def test_a_rejected_reply_is_told_to_the_model_which_answers_again() -> None:
    def no_promises(subject: ReplySubject) -> Outcome:
        return Trip("do not promise") if subject.text.startswith("I promise") else Pass()

    async def promise_first(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        told = request.messages[-1].text
        return f"corrected after: {told}" if "rejected" in told else "I promise a refund"

    b = Brain([plan_json({"description": "answer"})], work=promise_first)
    guard = Guardrail(no_promises, "model_reply", on_trip="tell_model")
    outcome, seen = await run(make_team(Till(), b, worker_guards=[guard]))
    assert isinstance(outcome, RunResult)
    assert outcome.steps[0].output == (
        "corrected after: Your reply was rejected by guardrail 'no_promises': do not promise. "
        "Answer again."
    )
    assert outcome.model_calls >= 2
    assert trips(seen)[0].subject == "model_reply"
    again = Brain([plan_json({"description": "answer"})], work=promise_first)
    failed, _ = await run(make_team(Till(), again, worker_guards=[no_promises]))
    failed_step(failed)


async def test_a_rejected_reply_with_tool_calls_runs_none_of_them() -> None:
    def no_refund_calls(subject: ReplySubject) -> Outcome:
        calls = [c.name for c in subject.response.tool_calls]
        return Trip("refunds are not allowed") if "issue_refund" in calls else Pass()

    async def refund_then_give_up(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("issue_refund", {"order_id": 7}, call_id="c1")
        return f"gave up: {results[0].content}"

    till = Till()
    b = Brain([plan_json({"description": "refund"})], work=refund_then_give_up)
    guard = Guardrail(no_refund_calls, "model_reply", on_trip="tell_model")
    outcome, _ = await run(make_team(till, b, team_guards=[guard]))
    assert isinstance(outcome, RunResult)
    assert till.refunds == []
    assert outcome.steps[0].output == (
        "gave up: not run: rejected by guardrail 'no_refund_calls': refunds are not allowed"
    )


def test_a_callable_without_a_subject_annotation_is_a_config_error() -> None:
    def vague(subject):  # type: ignore[no-untyped-def]
        return Pass()

    with pytest.raises(ConfigError, match="cannot tell which subject it checks"):
        make_team(Till(), brain(), worker_guards=[vague])
    with pytest.raises(ConfigError, match="on_trip must be 'fail_step' or 'tell_model'"):
        Guardrail(no_refunds, "tool_call", on_trip="ignore")  # type: ignore[arg-type]


def test_guardrail_written_without_its_kind_says_so() -> None:
    # It made the check into the decorator's own inner function, refused later as
    # "guardrail 'wrap': cannot tell which subject it checks", the check's name gone.
    with pytest.raises(
        ConfigError, match=r"@guardrail needs the kind of subject first: .*'no_refunds'"
    ):
        guardrail(no_refunds)  # type: ignore[arg-type]


def test_tool_guardrails_must_name_a_tool_of_the_worker() -> None:
    with pytest.raises(ConfigError, match="names tool 'refund', which it does not have"):
        make_team(Till(), brain(), tool_guards={"refund": [no_refunds]})
