"""A guard chain cut mid-way charges the judge calls it made that had answered.

A chain of two guards, the first of whose ``judge`` call answered and the second's was
held until the run's cancel cut it, charged only the cut call (at its most): the first
judge's reply, billed by its provider, was in no count (its chain never returned what it
spent). Now a cut chain charges what its answered judges reported, to the role whose call
they judged (a step's worker; a planner-side call's role, as its ``CutWatch`` is cut),
one model call each, and that is no estimate.

The second judge's model is held on an Event it never gets; the run is cancelled once it is.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Literal

import anyio
import pytest

from regiment.errors import ModelRefused
from regiment.hierarchy import Budget, Planner, RunResult, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, ModelRequest, ScriptedModel, Usage, priced

from ..models import messages_api
from ..models.standin import Reply, StandIn, serve
from .cut_run import MAX_TOKENS, PRICE, brain, cancelled_once, held_until_cut
from .held_call import CLAUDE, FREE, USD, held_model

pytestmark = pytest.mark.anyio

FIRST = ModelRequest(messages=(Message.user("is this fine?"),))


async def _cut_on_second_judge(side: Literal["step", "planner"]) -> tuple[RunResult, Usage]:
    judging, held = held_until_cut()
    said: list[Usage] = []

    quick = ScriptedModel(lambda request: "fine", price=PRICE)
    slow = ScriptedModel(held, price=PRICE)

    async def first(subject: ReplySubject) -> Outcome:
        said.append((await judge(quick, FIRST)).usage)
        return Pass()

    async def second(subject: ReplySubject) -> Outcome:
        await judge(slow, ModelRequest(messages=(Message.user("and this?"),)))
        return Pass()

    model = ScriptedModel(brain, price=PRICE)
    chain = [first, second]
    team = Team(
        name="chained",
        planner=Planner(model=model, guardrails=[] if side == "step" else chain),
        workers=[
            Worker(
                name="w",
                description="drafts",
                model=model,
                guardrails=chain if side == "step" else [],
            )
        ],
        budget=Budget(usd=1.0),
    )
    result = await cancelled_once(team, judging.wait)
    (first_said,) = said
    assert first_said.total_tokens > 0
    return result, first_said


async def test_a_steps_cut_chain_charges_its_answered_judge(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result, said = await _cut_on_second_judge("step")
    assert result.model_calls == 4  # the plan, the step's reply, both judge calls
    (line,) = [r.getMessage() for r in caplog.records if "1 judge call answered" in r.getMessage()]
    assert line.startswith("w: ")
    estimated = result.estimated_usage
    assert estimated.output_tokens == MAX_TOKENS  # only the cut one is an estimate
    # the step's reply (in its report) + the cut judge at its most + the answered judge
    spent = result.usage_by_role["w"]
    assert spent.micro_usd >= estimated.micro_usd + priced(said, PRICE).micro_usd


async def test_a_planner_guards_cut_chain_charges_its_answered_judge(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    result, said = await _cut_on_second_judge("planner")
    assert result.model_calls == 3  # the plan, both judge calls
    lines = [
        r.getMessage() for r in caplog.records if "answered before it was cut" in r.getMessage()
    ]
    assert len(lines) == 1
    estimated = result.estimated_usage
    assert estimated.output_tokens == MAX_TOKENS
    spent = result.usage_by_role["planner"]  # the plan's reply, the cut judge, the answered
    assert spent.micro_usd > estimated.micro_usd + priced(said, PRICE).micro_usd


@pytest.fixture
async def judges_api() -> AsyncIterator[StandIn]:
    """A stand-in Messages API that answers its first call (11 input, 7 output tokens)
    and never its second."""
    async for server in serve(messages_api.message([{"type": "text", "text": "fine"}])):
        server.queue(messages_api.message([{"type": "text", "text": "fine"}]))
        server.queue(Reply(200, {}, hold=True))
        yield server


async def test_judges_on_the_messages_api_cut_mid_chain_are_charged_what_they_said(
    judges_api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """Claude through its SDK: the synthesis' reply guards ask it in turn; the first
    judge's reply says what it spent, the second judge call is held until the cancel."""
    caplog.set_level(logging.INFO, logger="regiment.run")
    claude = held_model(judges_api.base_url)
    held = anyio.Event()

    async def first(subject: ReplySubject) -> Outcome:
        await judge(claude, FIRST)
        return Pass()

    async def second(subject: ReplySubject) -> Outcome:
        held.set()
        await judge(claude, ModelRequest(messages=(Message.user("and this?"),)))
        return Pass()

    model = ScriptedModel(brain, price=FREE)
    team = Team(
        name="chained",
        planner=Planner(model=model, synthesizer_guardrails=[first, second]),
        workers=[Worker(name="w", description="drafts", model=model)],
        budget=Budget(usd=USD),
    )

    async def second_held() -> None:
        await held.wait()
        with anyio.fail_after(30):  # a hang guard: until the second call is held
            while len(judges_api.requests) < 2:
                judges_api.received = anyio.Event()
                await judges_api.received.wait()

    result = await cancelled_once(team, second_held)
    most = result.estimated_usage  # the held judge call, at its most
    assert most.output_tokens == 200  # held_model's max_tokens
    said = priced(Usage(input_tokens=11, output_tokens=7), CLAUDE)
    # the scripted roles are free: the synthesizer's money is the two judge calls'
    assert result.usage_by_role["synthesizer"].micro_usd == most.micro_usd + said.micro_usd
    assert result.model_calls == 5  # plan, s1, the synthesis, both judge calls


async def test_a_refused_judge_before_the_cut_is_charged_its_calls() -> None:
    """The first judge's model refuses, having spent tokens in two model calls (the
    guard catches it and asks another); the second is held until the cancel."""
    judging, held = held_until_cut()
    refused_usage = Usage(input_tokens=9, output_tokens=2, micro_usd=11)

    async def refusing(request: ModelRequest) -> str:
        raise ModelRefused("refused", usage=refused_usage, model_calls=2)

    refuser = ScriptedModel(refusing, price=PRICE)
    slow = ScriptedModel(held, price=PRICE)

    async def guard(subject: ReplySubject) -> Outcome:
        with contextlib.suppress(ModelRefused):
            await judge(refuser, FIRST)
        await judge(slow, ModelRequest(messages=(Message.user("and this?"),)))
        return Pass()

    model = ScriptedModel(brain, price=PRICE)
    team = Team(
        name="refused",
        planner=Planner(model=model, guardrails=[guard]),
        workers=[Worker(name="w", description="drafts", model=model)],
        budget=Budget(usd=1.0),
    )
    result = await cancelled_once(team, judging.wait)
    assert result.model_calls == 4  # the plan, the refused judge's two calls, the held one
    planner = result.usage_by_role["planner"]
    assert planner.micro_usd > result.estimated_usage.micro_usd + refused_usage.micro_usd
