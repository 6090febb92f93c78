"""GenAI attributes on the spans of a run, decoded from real OTLP."""

from __future__ import annotations

import dataclasses

import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.hierarchy._model_call import ModelCaller
from regiment.models import Message, ModelRequest, ModelResponse, ScriptedModel, text_response
from regiment.telemetry import Telemetry, configure_tracing

from .otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.anyio


async def test_agent_spans_carry_provider_and_description_but_no_id_nor_conversation() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("attrs", endpoint=receiver.endpoint, set_global=False)
        team = build_team(ScriptedModel(refund_brain), Ledger())
        team = dataclasses.replace(team, telemetry=Telemetry(handle.provider))
        result = await team.run(GOAL)
        handle.shutdown()
        spans = receiver.spans()
    root = next(s for s in spans if s.name == "invoke_agent refunds")
    assert root.attributes["gen_ai.provider.name"] == "scripted"
    # The conventions keep gen_ai.agent.id for a hosted agent resource's stable id and
    # advise against in-process ones: the team's name is gen_ai.agent.name, not an id.
    assert "gen_ai.agent.id" not in root.attributes
    assert root.attributes["gen_ai.agent.name"] == "refunds"
    assert root.attributes["regiment.run.id"] == result.run_id
    billing = [s for s in spans if s.name == "invoke_agent billing"]
    assert billing
    for span in billing:
        assert span.attributes["gen_ai.provider.name"] == "scripted"
        assert "gen_ai.agent.id" not in span.attributes
        assert span.attributes["gen_ai.agent.name"] == "billing"
        assert span.attributes["gen_ai.agent.description"] == (
            "Checks refund eligibility, issues refunds, flags exceptions."
        )
    # no session: the run id is not a conversation id
    assert all("gen_ai.conversation.id" not in s.attributes for s in spans)


async def test_a_runs_session_is_its_conversation_id() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("attrs", endpoint=receiver.endpoint, set_global=False)
        team = build_team(ScriptedModel(refund_brain), Ledger())
        team = dataclasses.replace(team, telemetry=Telemetry(handle.provider))
        async with team.start() as running:
            await running.run(GOAL, session="ticket-4411")
        handle.shutdown()
        spans = receiver.spans()
    root = next(s for s in spans if s.name == "invoke_agent refunds")
    assert root.attributes["gen_ai.conversation.id"] == "ticket-4411"


class _RemoteModel:
    """A model that answers at once and says where its API lives, as the SDK models do."""

    name = "remote-x"
    provider = "openai"
    base_url = "https://models.internal.test:8443/v1/"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return text_response("ok")


async def test_chat_spans_name_the_server() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("attrs", endpoint=receiver.endpoint, set_global=False)
        caller = ModelCaller(_RemoteModel(), "planner", Telemetry(handle.provider))
        await caller.call(ModelRequest(system="s", messages=(Message.user("hi"),)))
        handle.shutdown()
        spans = receiver.spans()
    (chat,) = [s for s in spans if s.name.startswith("chat ")]
    assert chat.attributes["server.address"] == "models.internal.test"
    assert chat.attributes["server.port"] == 8443


async def test_an_agent_id_is_recorded_only_when_given() -> None:
    arn = "arn:aws:bedrock:us-east-1:123:agent/42"
    with OtlpReceiver() as receiver:
        handle = configure_tracing("attrs", endpoint=receiver.endpoint, set_global=False)
        telemetry = Telemetry(handle.provider)
        with telemetry.agent_span("hosted", agent_id=arn):
            pass
        with telemetry.agent_span("local"):
            pass
        handle.shutdown()
        spans = {s.name: s for s in receiver.spans()}
    assert spans["invoke_agent hosted"].attributes["gen_ai.agent.id"] == arn
    assert "gen_ai.agent.id" not in spans["invoke_agent local"].attributes


async def test_a_tool_call_span_has_the_tools_description_with_capture_off() -> None:
    # The conventions recommend gen_ai.tool.description on execute_tool spans; it was
    # missing. It is the tool's docstring (the application's text), not user content.
    with OtlpReceiver() as receiver:
        handle = configure_tracing("attrs", endpoint=receiver.endpoint, set_global=False)
        team = build_team(ScriptedModel(refund_brain), Ledger())
        team = dataclasses.replace(
            team, telemetry=Telemetry(handle.provider, capture_content=False)
        )
        await team.run(GOAL)
        handle.shutdown()
        spans = receiver.spans()
    (check,) = [s for s in spans if s.name == "execute_tool check_eligibility"]
    assert check.attributes["gen_ai.tool.description"] == (
        "Check whether an order can still be refunded (30-day window after shipping)."
    )
    assert "gen_ai.tool.call.arguments" not in check.attributes  # content stays out
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert all(s.attributes["gen_ai.tool.description"] for s in tools)
