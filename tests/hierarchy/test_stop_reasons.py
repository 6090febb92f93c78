"""Replies that stop short of an answer, from each provider on its own wire format
over the HTTP stand-in.

A worker's reply cut at its max_tokens limit in the middle of a tool call: the
call is not run (its arguments may be cut short), and the model is told why.
Claude's streamed ``input_json_delta`` s stop at ``{"order": 7, "amount": 15``
(of 1500), which a lenient reader (the Anthropic SDK's) takes as ``{"order": 7,
"amount": 15}``; a Chat Completions reply ends with ``finish_reason: "length"``.

A reply the model declined to give (Claude's ``refusal``, a Chat Completions
``content_filter``) is never acted on: not run as a plan, not committed as a
step's output, not returned as the answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel

from regiment.errors import ModelRefused, RunError, StepFailed
from regiment.hierarchy import Budget, Planner, Team, Worker
from regiment.models import AnthropicModel, ModelResponse, OpenAIModel, ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import tool

from ..models import chat_api, messages_api
from ..models.standin import Reply, StandIn, serve
from .brains import plan_json

pytestmark = pytest.mark.anyio

CUT = '{"order": 7, "amount": 15'  # where the limit cut '{"order": 7, "amount": 1500}'


def _claude_cut() -> Reply:
    block: messages_api.Block = {
        "type": "tool_use",
        "id": "t1",
        "name": "issue_refund",
        "input": {},
    }
    reply = messages_api.message([block], stop_reason="max_tokens")
    reply.body["content"] = [{**block, "input": {"order": 7, "amount": 15}}]
    assert reply.events is not None
    events = [e for e in reply.events if "input_json_delta" not in e[1]]
    at = next(i for i, e in enumerate(events) if e[0] == "content_block_stop")
    delta = {"type": "input_json_delta", "partial_json": CUT}
    piece = {"type": "content_block_delta", "index": 0, "delta": delta}
    reply.events = [*events[:at], ("content_block_delta", json.dumps(piece)), *events[at:]]
    return reply


def _replies(provider: str) -> tuple[Reply, Reply, Reply]:
    if provider == "anthropic":
        done = messages_api.message([{"type": "text", "text": "no refund issued"}])
        no_reply = messages_api.error(500, "api_error", "none", **{"x-should-retry": "false"})
        return _claude_cut(), done, no_reply
    cut = chat_api.completion(None, ("c1", "issue_refund", CUT), finish="length")
    no_reply = chat_api.error(500, "server_error", "none", **{"x-should-retry": "false"})
    return cut, chat_api.completion("no refund issued"), no_reply


def _refusal(provider: str) -> Reply:
    if provider == "anthropic":
        return messages_api.message([{"type": "text", "text": "I can"}], stop_reason="refusal")
    return chat_api.completion("I can", finish="content_filter")


def _model(provider: str, api: StandIn, stream: bool) -> AnthropicModel | OpenAIModel:
    if provider == "anthropic":
        return AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url, stream=stream)
    return OpenAIModel("gpt-test-1", api_key="k", base_url=f"{api.base_url}/v1", stream=stream)


def _planner(request: object) -> str | ModelResponse:
    return plan_json({"description": "refund order 7", "worker": "billing"})


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def api(provider: str) -> AsyncIterator[StandIn]:
    async for server in serve(_replies(provider)[2]):
        yield server


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_a_tool_call_cut_at_max_tokens_is_not_run_and_the_model_is_told(
    provider: str, api: StandIn, stream: bool
) -> None:
    refunds: list[tuple[int, int]] = []

    @tool
    def issue_refund(order: int, amount: int) -> str:
        """Refund an order."""
        refunds.append((order, amount))
        return "refunded"

    cut, done, _ = _replies(provider)
    api.queue(cut, done)
    model = _model(provider, api, stream)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner)),
        workers=[Worker(name="billing", description="Refunds.", model=model, tools=[issue_refund])],
    )
    async with model:
        result = await team.run("Refund order 7 in full")
    assert refunds == []  # never with the cut arguments
    (step,) = result.steps
    assert step.output == "no refund issued"
    (outcome,) = step.tool_outcomes
    assert (outcome.tool, outcome.is_error, outcome.error_type) == ("issue_refund", True, "cut_off")
    told = json.dumps(api.requests[1].body)
    assert "reached its max_tokens limit" in told


async def test_a_planner_that_refuses_fails_the_run_and_runs_no_step(
    provider: str, api: StandIn
) -> None:
    api.queue(_refusal(provider))
    model = _model(provider, api, True)
    worker = ScriptedModel(["never asked"])
    team = Team(
        name="refunds",
        planner=Planner(model=model),
        workers=[Worker(name="billing", description="Refunds.", model=worker)],
    )
    async with model:
        with pytest.raises(RunError, match="declined to answer") as caught:
            await team.run("Refund order 7 in full")
    assert isinstance(caught.value.__cause__, ModelRefused)
    assert worker.calls == 0  # "I can" was not read as a one-step plan
    assert len(api.requests) == 1


async def test_a_worker_that_refuses_fails_its_step(provider: str, api: StandIn) -> None:
    api.queue(_refusal(provider))
    model = _model(provider, api, False)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner)),
        workers=[Worker(name="billing", description="Refunds.", model=model)],
        budget=Budget(replans=0),
    )
    async with model:
        with pytest.raises(StepFailed, match="declined to answer for 'billing'") as caught:
            await team.run("Refund order 7 in full")
    assert "ModelRefused" in caught.value.cause


async def test_a_refused_reply_is_charged_to_its_step_its_run_and_its_span(
    provider: str, api: StandIn
) -> None:
    # The provider bills a refusal like any reply; its step, the run's usage (and so
    # its budget) and its chat span counted nothing of it.
    if provider == "anthropic":
        refusal = messages_api.message(
            [{"type": "text", "text": "I can"}], stop_reason="refusal", input_tokens=500
        )
    else:
        refusal = chat_api.completion("I can", finish="content_filter", prompt=500, output=7)
    api.queue(refusal)
    model = _model(provider, api, True)
    collector = SpanCollector()
    tracing = TracerProvider(shutdown_on_exit=False)
    tracing.add_span_processor(collector)
    worker = Worker(name="billing", description="Refunds.", model=model)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner)),
        workers=[worker],
        budget=Budget(replans=0),
        telemetry=Telemetry(tracing),
    )
    async with model:
        with pytest.raises(StepFailed) as caught:
            await team.run("Refund order 7 in full")
    assert caught.value.failed is not None
    (step,) = caught.value.failed.steps
    assert (step.model_calls, step.usage.input_tokens, step.usage.output_tokens) == (1, 500, 7)
    assert caught.value.failed.usage.input_tokens >= 500
    (chat,) = [s for s in collector.spans() if s.name == f"chat {model.name}"]
    attributes = chat.attributes or {}
    assert attributes["gen_ai.usage.input_tokens"] == 500
    assert attributes["gen_ai.response.finish_reasons"] == (refusal_reason(provider),)
    assert attributes["error.type"] == "regiment.errors.ModelRefused"


def refusal_reason(provider: str) -> str:
    return "refusal" if provider == "anthropic" else "content_filter"


async def _logged_cut_answer(
    api: StandIn, provider: str, cut: Reply, caplog: pytest.LogCaptureFixture
) -> str:
    """The warning a synthesizer's answer ``cut`` short is logged with."""
    api.queue(cut)
    model = _model(provider, api, True)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner), synthesizer_model=model),
        workers=[Worker(name="billing", description="Refunds.", model=ScriptedModel(["done"]))],
    )
    async with model:
        with caplog.at_level("WARNING", logger="regiment.models"):
            result = await team.run("Refund order 7 in full")
    assert result.answer == "Order 7 is"
    (record,) = [r for r in caplog.records if r.name == "regiment.models"]
    assert "'synthesizer'" in record.getMessage()
    return record.getMessage()


async def test_an_answer_cut_at_max_tokens_is_logged_as_cut_short(
    provider: str, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    if provider == "anthropic":
        cut = messages_api.message(
            [{"type": "text", "text": "Order 7 is"}], stop_reason="max_tokens"
        )
    else:
        cut = chat_api.completion("Order 7 is", finish="length")
    assert "raise max_tokens" in await _logged_cut_answer(api, provider, cut, caplog)


@pytest.mark.parametrize("provider", ["anthropic"])  # Chat Completions has no such reason
async def test_an_answer_cut_by_the_context_window_says_max_tokens_cannot_help(
    provider: str, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    # It said "raise max_tokens", which gives no room the window does not have.
    stop = "model_context_window_exceeded"
    cut = messages_api.message([{"type": "text", "text": "Order 7 is"}], stop_reason=stop)
    said = await _logged_cut_answer(api, provider, cut, caplog)
    assert "reached the model's context window" in said
    assert "a larger context window" in said
    assert "raise max_tokens" not in said


class Refund(BaseModel):
    """A refund to make."""

    order: int
    amount: int


@pytest.mark.parametrize("provider", ["anthropic"])  # Claude answers through a forced tool call
async def test_a_structured_answer_cut_at_max_tokens_is_asked_for_again(
    provider: str, api: StandIn
) -> None:
    def answer(amount: int, stop: str) -> Reply:
        block: messages_api.Block = {"type": "tool_use", "id": "t1", "name": "final_answer"}
        return messages_api.message(
            [{**block, "input": {"order": 7, "amount": amount}}], stop_reason=stop
        )

    api.queue(answer(15, "max_tokens"), answer(1500, "tool_use"))  # the SDK read a cut 1500
    model = AnthropicModel("claude-test-1", api_key="k", base_url=api.base_url)
    team = Team(
        name="refunds",
        planner=Planner(model=ScriptedModel(_planner), synthesizer_model=model),
        workers=[Worker(name="billing", description="Refunds.", model=ScriptedModel(["done"]))],
        output_type=Refund,
    )
    async with model:
        result = await team.run("Refund order 7 in full")
    assert result.output_as(Refund) == Refund(order=7, amount=1500)
    assert "cut short" in json.dumps(api.requests[1].body)


async def test_a_plan_cut_at_max_tokens_goes_back_to_the_planner(
    provider: str, api: StandIn
) -> None:
    cut_plan = "1. check that order 7 may be refunded\n2. refund ord"
    whole = "1. check that order 7 may be refunded\n2. refund order 7\n3. e-mail the customer"
    if provider == "anthropic":
        text = messages_api.message
        api.queue(
            text([{"type": "text", "text": cut_plan}], stop_reason="max_tokens"),
            text([{"type": "text", "text": whole}]),
        )
    else:
        api.queue(chat_api.completion(cut_plan, finish="length"), chat_api.completion(whole))
    model = _model(provider, api, True)
    team = Team(
        name="refunds",
        planner=Planner(model=model, synthesizer_model=ScriptedModel(["refunded"])),
        workers=[Worker(name="billing", description="Refunds.", model=ScriptedModel(["ok"] * 3))],
    )
    async with model:
        result = await team.run("Refund order 7 in full")
    descriptions = [s.description for s in result.plans[0].steps]
    assert descriptions == [line[3:] for line in whole.splitlines()]
    assert "reached its max_tokens limit" in json.dumps(api.requests[1].body)
