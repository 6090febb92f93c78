"""Guardrails on the planner side: the plan (re-prompted when tripped, bounded),
the answer (re-asked once, then the run fails), the roles' model calls, the
``regiment.guardrail`` spans, and a slow guard cancelled with its run."""

from __future__ import annotations

import dataclasses

import anyio
import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import GuardrailError, PlanError
from regiment.hierarchy import (
    AnswerSubject,
    Budget,
    Critic,
    Event,
    GuardrailRewrote,
    GuardrailTripped,
    Planner,
    PlanStep,
    PlanSubject,
    RequestSubject,
    Rewrite,
    RunResult,
    Team,
    Trip,
    Worker,
)
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge, redact_pii
from regiment.models import Message, ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.telemetry import SpanCollector, Telemetry, configure_tracing

from ..telemetry.otlp_receiver import OtlpReceiver
from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Answers:
    """A brain whose synthesizer replies from a list."""

    brain: Brain
    answers: list[str]
    synth_requests: list[ModelRequest] = dataclasses.field(default_factory=list)

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "synthesizer":
            self.synth_requests.append(request)
            return text_response(self.answers[len(self.synth_requests) - 1])
        return await self.brain(request)


def make_team(model: ScriptedModel, planner: Planner | None = None, **team: object) -> Team:
    worker = Worker(name="billing", description="refunds", model=model)
    return Team(
        name="t",
        planner=planner or Planner(model=model),
        workers=[worker],
        budget=Budget(replans=0),
        **team,  # type: ignore[arg-type]
    )


async def events_of(team: Team, goal: str = "refund order 7") -> list[Event]:
    async with team.start() as running, running.stream(goal) as events:
        return [event async for event in events]


def refund_first(subject: PlanSubject) -> Outcome:
    if "refund" in subject.steps[0].description:
        return Trip("check eligibility before refunding")
    return Pass()


async def test_a_tripped_plan_goes_back_to_the_planner_with_the_reason() -> None:
    brain = Brain(
        [
            plan_json({"description": "refund order 7"}),
            plan_json({"description": "check eligibility of order 7"}),
        ]
    )
    model = ScriptedModel(brain)
    team = make_team(model, Planner(model=model, guardrails=[refund_first]))
    async with team.start() as running:
        result = await running.run("refund order 7")
    assert [s.description for s in result.plans[-1].steps] == ["check eligibility of order 7"]
    assert len(brain.plan_requests) == 2
    told = brain.plan_requests[1].messages[-1].text
    assert "guardrail 'refund_first' rejected the plan: check eligibility before refunding" in told
    tripped = [e for e in result.events if isinstance(e, GuardrailTripped)]
    assert [(e.subject, e.role, e.reason) for e in tripped] == [
        ("plan", "planner", "check eligibility before refunding")
    ]


async def test_a_plan_that_keeps_tripping_ends_in_plan_error() -> None:
    brain = Brain([plan_json({"description": "refund order 7"})] * 2)
    model = ScriptedModel(brain)
    team = make_team(model, Planner(model=model, max_plan_attempts=2), guardrails=[refund_first])
    async with team.start() as running:
        with pytest.raises(PlanError, match="no acceptable plan in 2 attempts: guardrail") as info:
            await running.run("refund order 7")
    assert str(info.value).endswith(
        "; each reply went back to the planner's model with what was wrong "
        "(PlanError.last_reply is its last reply): give the planner a model or prompt that "
        "plans better, or raise Planner.max_plan_attempts (2; `max_plan_attempts` under `[planner]` in a team file)"
    )


async def test_a_plan_rewrite_is_the_plan_that_runs() -> None:
    async def add_check(subject: PlanSubject) -> Outcome:
        first = PlanStep(id="s0", description="check eligibility", worker="billing")
        steps = tuple(
            msgspec.structs.replace(s, depends_on=(*s.depends_on, "s0")) for s in subject.steps
        )
        return Rewrite(dataclasses.replace(subject, steps=(first, *steps)))

    brain = Brain([plan_json({"description": "refund order 7"})])
    model = ScriptedModel(brain)
    async with make_team(model, guardrails=[add_check]).start() as running:
        result = await running.run("refund order 7")
    assert [s.id for s in result.plans[0].steps] == ["s0", "s1"]
    assert result.committed == ("s0", "s1")
    assert any(isinstance(e, GuardrailRewrote) and e.subject == "plan" for e in result.events)


def no_promises(subject: AnswerSubject) -> Outcome:
    return Trip("the answer promises a refund") if "promise" in subject.text else Pass()


async def test_a_tripped_answer_is_asked_for_once_more_with_the_reason() -> None:
    brain = Answers(
        Brain([plan_json({"description": "look"})]), ["we promise a refund", "order checked"]
    )
    model = ScriptedModel(brain)
    team = make_team(model, Planner(model=model, synthesizer_guardrails=[no_promises]))
    async with team.start() as running:
        result = await running.run("refund order 7")
    assert result.status == "completed"
    assert result.answer == "order checked"
    retry = brain.synth_requests[1].messages
    assert retry[-2].text == "we promise a refund"
    assert "the answer promises a refund" in retry[-1].text


async def test_an_answer_that_trips_twice_fails_the_run_with_the_reason() -> None:
    brain = Answers(Brain([plan_json({"description": "look"})]), ["a promise", "another promise"])
    model = ScriptedModel(brain)
    async with make_team(model, guardrails=[no_promises]).start() as running:
        with pytest.raises(GuardrailError, match="the answer promises a refund") as caught:
            await running.run("refund order 7")
    assert (caught.value.guardrail, caught.value.subject) == ("no_promises", "answer")
    assert len(brain.synth_requests) == 2


async def test_role_request_guards_rewrite_the_planners_call() -> None:
    brain = Brain([plan_json({"description": "write to the customer"})])
    model = ScriptedModel(brain)
    team = make_team(model, Planner(model=model, guardrails=[redact_pii()]))
    async with team.start() as running:
        result = await running.run("e-mail ann@example.com about order 7")
    sent = brain.plan_requests[0].messages[0].text
    assert "ann@example.com" not in sent
    assert "[e-mail]" in sent
    rewrote = [e for e in result.events if isinstance(e, GuardrailRewrote)]
    assert [(e.guardrail, e.subject, e.role) for e in rewrote] == [
        ("redact_pii", "model_request", "planner")
    ]


async def test_a_tripped_role_request_fails_the_run() -> None:
    def block(subject: RequestSubject) -> Outcome:
        return Trip("no planning today")

    brain = Brain([plan_json({"description": "look"})])
    model = ScriptedModel(brain)
    async with make_team(model, Planner(model=model, guardrails=[block])).start() as running:
        with pytest.raises(GuardrailError, match="no planning today"):
            await running.run("refund order 7")
    assert brain.plan_requests == []


@pytest.mark.parametrize("capture", [False, True])
async def test_every_guard_is_a_span_the_reason_only_with_capture(capture: bool) -> None:
    """Exported over real OTLP: a trip's reason (user-facing text) only with capture on;
    with it off, its length, as a replan's reason and a check's detail."""
    brain = Brain([plan_json({"description": "refund order 7"}), plan_json({"description": "x"})])
    model = ScriptedModel(brain)
    with OtlpReceiver() as receiver:
        handle = configure_tracing("guards", endpoint=receiver.endpoint, set_global=False)
        telemetry = Telemetry(handle.provider, capture_content=capture)
        team = make_team(model, guardrails=[refund_first], telemetry=telemetry)
        async with team.start() as running:
            await running.run("refund order 7")
        handle.shutdown()
        spans = [s for s in receiver.spans() if s.name == "regiment.guardrail"]
    outcomes = [dict(s.attributes) for s in spans]
    assert [(a["regiment.guardrail.name"], a["regiment.guardrail.outcome"]) for a in outcomes] == [
        ("refund_first", "trip"),
        ("refund_first", "pass"),
    ]
    assert all(a["regiment.guardrail.subject"] == "plan" for a in outcomes)
    said = "check eligibility before refunding"
    reason = outcomes[0].get("regiment.guardrail.reason")
    assert reason == (said if capture else None)
    length = outcomes[0].get("regiment.guardrail.reason_length")
    assert length == (None if capture else len(said))
    assert "regiment.guardrail.reason_length" not in outcomes[1]  # a pass has no reason
    assert all(s.parent_span_id is not None for s in spans)  # inside the run's trace


async def test_a_captured_trip_reason_has_its_secrets_redacted() -> None:
    # Every other captured text is redacted; the reason went on the span as it was.
    def no_keys(subject: AnswerSubject) -> Outcome:
        return Trip("it quotes api_key=sk-live-0123456789abcdefXYZ and password: hunter2x9")

    collector = SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    model = ScriptedModel(Brain([plan_json({"description": "look"})]))
    planner = Planner(model=model, synthesizer_guardrails=[no_keys])
    team = make_team(model, planner, telemetry=Telemetry(provider, capture_content=True))
    async with team.start() as running:
        with pytest.raises(GuardrailError):
            await running.run("refund order 7")
    reasons = {
        (s.attributes or {})["regiment.guardrail.reason"]
        for s in collector.spans()
        if s.name == "regiment.guardrail"
    }
    assert reasons == {"it quotes api_key=[REDACTED] and password: [REDACTED]"}


async def test_a_slow_guard_is_cancelled_with_its_run() -> None:
    entered, left = anyio.Event(), anyio.Event()

    async def slow(subject: AnswerSubject) -> Outcome:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            left.set()
        return Pass()

    brain = Brain([plan_json({"description": "look"})])
    model = ScriptedModel(brain)
    async with make_team(model, guardrails=[slow]).start() as running:
        results: list[RunResult] = []
        async with anyio.create_task_group() as tg:

            async def go() -> None:
                results.append(await running.run("refund order 7"))

            tg.start_soon(go)
            await entered.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):
            await left.wait()
        assert running.active_runs == 0
    assert results == []


async def test_a_judges_model_calls_are_charged_to_the_run_and_traced() -> None:
    """An LLM-as-judge guard on the plan and on each worker reply: every judge
    call is a ``chat`` span of the run and counts in the run's model calls."""
    verdicts = ScriptedModel(lambda request: text_response("ok"))

    async def plan_judge(subject: PlanSubject) -> Outcome:
        reply = await judge(verdicts, ModelRequest(messages=(Message.user("judge"),)))
        return Pass() if reply.text == "ok" else Trip(reply.text)

    async def reply_judge(subject: ReplySubject) -> Outcome:
        reply = await judge(verdicts, ModelRequest(messages=(Message.user("judge"),)))
        return Pass() if reply.text == "ok" else Trip(reply.text)

    collector = SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    brain = Brain([plan_json({"description": "one"}, {"description": "two"})])
    model = ScriptedModel(brain)
    plain = make_team(model)
    async with plain.start() as running:
        before = await running.run("refund order 7")
    brain = Brain([plan_json({"description": "one"}, {"description": "two"})])
    model = ScriptedModel(brain)
    worker = Worker(name="billing", description="refunds", model=model, guardrails=[reply_judge])
    team = Team(
        name="t",
        planner=Planner(model=model, guardrails=[plan_judge]),
        workers=[worker],
        telemetry=Telemetry(provider),
    )
    async with team.start() as running:
        after = await running.run("refund order 7")
    assert after.model_calls == before.model_calls + 3  # one plan judge, one per step reply
    planner_tokens = after.usage_by_role["planner"].total_tokens
    assert planner_tokens > before.usage_by_role["planner"].total_tokens
    judged = [
        s for s in collector.spans() if (s.attributes or {}).get("gen_ai.agent.name") == "guardrail"
    ]
    assert len(judged) == 3
    assert all(s.name.startswith("chat") for s in judged)


async def test_a_rewrite_into_an_invalid_plan_goes_back_to_the_planner() -> None:
    def dangling(subject: PlanSubject) -> Outcome:
        if subject.steps[0].depends_on:
            return Pass()
        steps = tuple(msgspec.structs.replace(s, depends_on=("nowhere",)) for s in subject.steps)
        return Rewrite(dataclasses.replace(subject, steps=steps))

    brain = Brain([plan_json({"description": "one"}), plan_json({"description": "two"})])
    model = ScriptedModel(brain)
    team = make_team(model, Planner(model=model, max_plan_attempts=1), guardrails=[dangling])
    async with team.start() as running:
        with pytest.raises(PlanError, match="a guardrail rewrote the plan into an invalid one"):
            await running.run("refund order 7")


async def test_critic_guards_see_the_critics_calls_only() -> None:
    seen: list[str] = []

    def critic_reply(subject: ReplySubject) -> Outcome:
        seen.append(subject.role)
        return Rewrite(
            dataclasses.replace(subject, response=text_response('{"passed": true, "feedback": ""}'))
        )

    async def critic_brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "critic":
            return '{"passed": false, "feedback": "try again"}'  # rewritten to a pass
        return await brain(request)

    brain = Brain([plan_json({"description": "look"})])
    model = ScriptedModel(critic_brain)
    team = make_team(model, critic=Critic(guardrails=[critic_reply]))
    async with team.start() as running:
        result = await running.run("refund order 7")
    assert seen == ["critic"]
    assert [v.passed for v in result.verdicts] == [True]
    rewrote = [e for e in result.events if isinstance(e, GuardrailRewrote)]
    assert [(e.subject, e.role) for e in rewrote] == [("model_reply", "critic")]
