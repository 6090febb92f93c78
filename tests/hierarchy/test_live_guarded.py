"""A streamed run whose replies or answer are guarded: the reader sees only text
the guards let through, as they left it (a tripped reply or answer never shows,
a rewritten one shows rewritten), in one piece once they have judged it. So too
a structured answer: only the one that validated, however the model gave it."""

from __future__ import annotations

import dataclasses
import json

import msgspec
import pytest
from pydantic import BaseModel

from regiment.hierarchy import (
    AnswerSubject,
    GuardrailRewrote,
    GuardrailTripped,
    Pass,
    Planner,
    ReplySubject,
    Rewrite,
    Team,
    TextDelta,
    Trip,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    ToolCallPart,
    text_response,
)

from .brains import plan_json

pytestmark = pytest.mark.anyio

SECRET = "the vault code is 4711"


def _brain(answers: list[str]) -> ScriptedModel:
    def brain(request: ModelRequest) -> ModelResponse | str:
        match request.role:
            case "planner" | "replanner":
                return plan_json({"description": "review order 7", "worker": "clerk"})
            case "worker":
                return f"order 7 reviewed; {SECRET}"
            case _:
                return text_response(answers.pop(0))

    return ScriptedModel(brain, delta_size=3)  # many small deltas when not held


def _redact(reply: ReplySubject) -> Pass | Rewrite[ReplySubject]:
    if "4711" not in reply.text:
        return Pass()
    clean = (TextPart(text=reply.text.replace("4711", "[code]")),)
    response = msgspec.structs.replace(reply.response, parts=clean)
    return Rewrite(dataclasses.replace(reply, response=response))


def _no_promises(answer: AnswerSubject) -> Trip | Pass:
    return Trip("do not promise refunds") if "promise" in answer.text else Pass()


async def _streamed(team: Team) -> tuple[list[TextDelta], list[object]]:
    deltas: list[TextDelta] = []
    events: list[object] = []
    async with team.start() as running, running.stream("review order 7") as stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                deltas.append(event)
            else:
                events.append(event)
    return deltas, events


def _said(deltas: list[TextDelta], role: str) -> str:
    return "".join(d.text for d in deltas if d.role == role)


async def test_a_tripped_answer_never_reaches_the_reader() -> None:
    model = _brain(["We promise a refund.", "Order 7 is being reviewed."])
    team = Team(
        name="support",
        planner=Planner(model=model, synthesizer_guardrails=[_no_promises]),
        workers=[Worker(name="clerk", description="Reviews orders.", model=model)],
    )
    deltas, events = await _streamed(team)
    assert any(isinstance(e, GuardrailTripped) for e in events)
    assert _said(deltas, "synthesizer") == "Order 7 is being reviewed."
    assert all("promise" not in d.text for d in deltas)


async def test_a_worker_reply_a_guard_trips_on_never_reaches_the_reader() -> None:
    def no_secret(reply: ReplySubject) -> Trip | Pass:
        return Trip("leaks the code") if "4711" in reply.text else Pass()

    model = _brain(["Order 7 is being reviewed."] * 4)
    clerk = Worker(name="clerk", description="Reviews orders.", model=model, guardrails=[no_secret])
    team = Team(name="support", planner=Planner(model=model), workers=[clerk])
    deltas, events = await _streamed(team)
    assert any(isinstance(e, GuardrailTripped) for e in events)
    assert all("4711" not in d.text for d in deltas)
    assert _said(deltas, "worker") == ""


async def test_a_rewritten_reply_reaches_the_reader_rewritten_in_one_piece() -> None:
    model = _brain(["Order 7 is being reviewed."])
    team = Team(
        name="support",
        planner=Planner(model=model, guardrails=[_redact]),  # the planner's replies
        workers=[Worker(name="clerk", description="Reviews orders.", model=model)],
        guardrails=[_redact],  # and every worker's
    )
    deltas, events = await _streamed(team)
    assert any(isinstance(e, GuardrailRewrote) for e in events)
    worker = [d for d in deltas if d.role == "worker"]
    assert [d.text for d in worker] == ["order 7 reviewed; the vault code is [code]"]
    assert (worker[0].worker, worker[0].step_id) == ("clerk", "s1")
    planner = [d for d in deltas if d.role == "planner"]
    assert [d.text for d in planner] == [
        plan_json({"description": "review order 7", "worker": "clerk"})
    ]
    assert _said(deltas, "synthesizer") == "Order 7 is being reviewed."


class Refund(BaseModel):
    """A refund to make."""

    order: int
    amount: int


async def test_only_the_structured_answer_that_validated_reaches_the_reader() -> None:
    # The first answer does not validate; the second comes as Claude gives one: the
    # arguments of a forced tool call, with no text.
    call = ToolCallPart(id="t1", name="final_answer", arguments={"order": 7, "amount": 1500})
    answers: list[str | ModelResponse] = [
        '{"order": 7}',
        ModelResponse(parts=(call,), stop_reason="tool_use", model=""),
    ]

    def brain(request: ModelRequest) -> str | ModelResponse:
        if request.role == "planner":
            return plan_json({"description": "refund order 7", "worker": "clerk"})
        return "refund 1500" if request.role == "worker" else answers.pop(0)

    model = ScriptedModel(brain, delta_size=3)
    team = Team(
        name="support",
        planner=Planner(model=model),
        workers=[Worker(name="clerk", description="Refunds.", model=model)],
        output_type=Refund,
    )
    deltas, _ = await _streamed(team)
    said = _said(deltas, "synthesizer")
    assert json.loads(said) == {"order": 7, "amount": 1500}
