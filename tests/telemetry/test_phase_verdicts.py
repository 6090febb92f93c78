"""What a planner phase concluded, readable on its span in the exported trace: a plan
reply the run refused (and asked again for) is not a second identical `plan` span, and
a `critique` span says whether the round passed, without the critic's words unless
content capture is on."""

from __future__ import annotations

import contextlib
import dataclasses
import json

import pytest
from pydantic import BaseModel

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.errors import StepFailed
from regiment.hierarchy import (
    Budget,
    Check,
    Compression,
    ContextCompressed,
    Critic,
    Planner,
    RunResult,
    StepReport,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel
from regiment.telemetry import Telemetry, configure_tracing

from ..hierarchy.brains import plan_json
from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio

FEEDBACK = "the tax is missing, ask billing (password: hunter2-secret)"


@dataclasses.dataclass
class _Brain:
    """Plans: one reply that names a worker the team lacks, then a valid one; a second
    round's plan. The critic: round 1 fails, then a reply that is no verdict, then passes."""

    plans: list[str]
    verdicts: list[str]

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            return self.plans.pop(0)
        if request.role == "critic":
            return self.verdicts.pop(0)
        return "done" if request.role == "worker" else "the answer"


def _team() -> Team:
    brain = _Brain(
        plans=[
            plan_json({"description": "find the price", "worker": "nobody"}),
            plan_json({"description": "find the price", "worker": "w"}),
            plan_json({"description": "find the tax", "worker": "w"}),
        ],
        verdicts=[
            json.dumps({"passed": False, "feedback": FEEDBACK}),
            "I cannot decide",
            json.dumps({"passed": True}),
        ],
    )
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
        critic=Critic(),
    )


async def _traced(
    team: Team, goal: str, capture: bool = False
) -> tuple[RunResult, tuple[ReceivedSpan, ...]]:
    """``team`` run on ``goal``, and its spans as the real OTLP exporter sent them."""
    with OtlpReceiver() as receiver:
        handle = configure_tracing("phases", endpoint=receiver.endpoint, set_global=False)
        telemetry = Telemetry(handle.provider, capture_content=capture)
        result = await dataclasses.replace(team, telemetry=telemetry).run(goal)
        handle.shutdown()
        return result, receiver.spans()


async def _exported(capture: bool) -> tuple[ReceivedSpan, ...]:
    result, spans = await _traced(_team(), "price", capture)
    assert (result.status, result.answer) == ("completed", "the answer")
    return spans


def _named(spans: tuple[ReceivedSpan, ...], name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == name]  # in the order they ended


async def test_a_refused_plan_reply_and_the_critic_verdicts_read_on_their_spans() -> None:
    spans = await _exported(capture=False)
    refused, adopted, round_two = _named(spans, "plan planner")
    assert refused.status_code == 2  # ERROR: this reply gave no plan, the next one did
    assert refused.attributes["error.type"] == "invalid_plan"
    assert refused.status_message == "invalid_plan"  # the problems quote the reply: content
    assert "regiment.plan.steps" not in refused.attributes
    assert isinstance(refused.attributes["regiment.error.message_length"], int)
    for good, steps in ((adopted, 1), (round_two, 2)):  # round two keeps round one's step
        assert good.status_code == 0
        assert "error.type" not in good.attributes
        assert good.attributes["regiment.plan.steps"] == steps

    failed, unreadable, passed = _named(spans, "critique")
    assert failed.attributes["regiment.critique.passed"] is False
    assert failed.attributes["regiment.critique.feedback_length"] == len(FEEDBACK)
    assert "regiment.critique.feedback" not in failed.attributes
    assert failed.status_code == 0  # a round that fails is a verdict, not an error
    assert unreadable.status_code == 2
    assert unreadable.attributes["error.type"] == "invalid_verdict"
    assert "regiment.critique.passed" not in unreadable.attributes
    assert passed.attributes["regiment.critique.passed"] is True
    assert passed.status_code == 0
    assert [s.attributes["regiment.round"] for s in (failed, unreadable, passed)] == [1, 2, 2]
    assert all("hunter2" not in str(s.attributes) for s in spans)


async def test_with_capture_on_the_spans_say_why() -> None:
    spans = await _exported(capture=True)
    refused = _named(spans, "plan planner")[0]
    assert "nobody" in refused.status_message  # the validator's problem, as the planner got it
    failed = _named(spans, "critique")[0]
    feedback = failed.attributes["regiment.critique.feedback"]
    assert isinstance(feedback, str)
    assert feedback.startswith("the tax is missing, ask billing")
    assert "hunter2" not in feedback  # redacted as all captured text is
    assert "regiment.critique.feedback_length" not in failed.attributes


async def test_a_compress_span_says_how_much_it_shrank_the_context() -> None:
    # It said nothing but its name: not whether it was worth its model call.
    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return plan_json(*({"description": f"read meter {n}"} for n in range(3)))
        if request.role == "compressor":
            return json.dumps({"facts": {"s1": "1", "s2": "2", "s3": "3"}})
        return "noise; " * 300 if request.role == "worker" else "the answer"

    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
        compression=Compression(threshold_tokens=200),
    )
    result, spans = await _traced(team, "meters")
    (event,) = [e for e in result.events if isinstance(e, ContextCompressed)]
    (compress,) = _named(spans, "compress")
    assert compress.attributes["gen_ai.agent.name"] == "compressor"  # as its chat span says
    assert compress.attributes["regiment.compress.before_tokens"] == event.before_tokens
    assert compress.attributes["regiment.compress.after_tokens"] == event.after_tokens
    assert event.after_tokens < event.before_tokens


PHASES = ("critique", "compress", "synthesize")


def _phase_agents(spans: tuple[ReceivedSpan, ...]) -> dict[str, set[object]]:
    """Each phase span's gen_ai.agent.name, and its chat span's: the role that answered."""
    chats = {s.parent_span_id: s for s in spans if s.name.startswith("chat ")}
    found: dict[str, set[object]] = {}
    for span in spans:
        if span.name in PHASES or span.name.startswith("plan "):
            chat = chats[span.span_id]
            names = {span.attributes.get("gen_ai.agent.name"), chat.attributes["gen_ai.agent.name"]}
            found.setdefault(span.name, set()).update(names)
    return found


async def test_every_phase_span_names_its_agent_as_its_model_call_does() -> None:
    # The plan span named the planner (as the GenAI conventions' plan span does), but a
    # replan, critique, compress or synthesize span named no agent: a query by agent missed
    # the planner's replans, and the critic's or compressor's work but for its chat span.
    _, refund = await _traced(build_team(ScriptedModel(refund_brain), Ledger()), GOAL)
    agents = _phase_agents(refund) | _phase_agents(await _exported(capture=False))
    assert agents == {
        "plan planner": {"planner"},  # the first plan's and the replan's
        "critique": {"critic"},
        "synthesize": {"synthesizer"},
    }


class Refund(BaseModel):
    amount: int


async def test_a_call_for_a_structured_answer_says_its_output_type() -> None:
    # The GenAI conventions require gen_ai.output.type on a chat span whose request asks
    # for an output format; the synthesizer's call for Team(output_type=...) had none.
    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            return plan_json({"description": "work out the refund"})
        return '{"amount": 5}' if request.role == "synthesizer" else "five"

    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
        output_type=Refund,
    )
    result, spans = await _traced(team, "refund")
    assert result.output == Refund(amount=5)
    types = {
        s.attributes["gen_ai.agent.name"]: s.attributes.get("gen_ai.output.type")
        for s in spans
        if s.name.startswith("chat ")
    }
    assert types == {"planner": None, "w": None, "synthesizer": "json"}


class ReadFailed(ValueError):
    """What the check's predicate raises."""


async def test_a_check_that_raised_is_an_error_and_one_that_said_no_is_not() -> None:
    # A predicate that raised read exactly as one that returned False: passed=false,
    # no status, no error.type, no exception event, so a bug in the check hid in Jaeger.
    def reads(report: StepReport) -> bool:
        if report.step_id == "s1":
            return False
        raise ReadFailed(f"cannot read {report.output!r}")

    async def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            return plan_json({"description": "one", "check": "c"})
        return "ann@example.com" if request.role == "worker" else "the answer"

    model = ScriptedModel(brain)
    with OtlpReceiver() as receiver:
        handle = configure_tracing("checks", endpoint=receiver.endpoint, set_global=False)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="w", model=model)],
            checks={"c": Check(description="c", predicate=reads)},
            budget=Budget(replans=1),
            telemetry=Telemetry(handle.provider),
        )
        with contextlib.suppress(StepFailed):
            await team.run("go")
        handle.shutdown()
        spans = receiver.spans()
    said_no, raised = _named(spans, "verify")
    assert said_no.attributes["regiment.check.passed"] is False
    assert (said_no.status_code, said_no.events) == (0, ())
    assert raised.attributes["regiment.check.passed"] is False  # a failed check all the same
    assert raised.status_code == 2
    assert raised.attributes["error.type"] == f"{__name__}.ReadFailed"
    (event,) = [attributes for name, attributes in raised.events if name == "exception"]
    assert event["exception.type"] == f"{__name__}.ReadFailed"
    assert "ann@" not in str(raised.attributes) + str(raised.events) + raised.status_message
