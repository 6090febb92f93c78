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


async def test_agent_spans_carry_provider_id_and_description_and_no_run_as_conversation() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("attrs", endpoint=receiver.endpoint, set_global=False)
        team = build_team(ScriptedModel(refund_brain), Ledger())
        team = dataclasses.replace(team, telemetry=Telemetry(handle.provider))
        result = await team.run(GOAL)
        handle.shutdown()
        spans = receiver.spans()
    root = next(s for s in spans if s.name == "invoke_agent refunds")
    assert root.attributes["gen_ai.provider.name"] == "scripted"
    assert root.attributes["gen_ai.agent.id"] == "refunds"
    assert root.attributes["regiment.run.id"] == result.run_id
    billing = [s for s in spans if s.name == "invoke_agent billing"]
    assert billing
    for span in billing:
        assert span.attributes["gen_ai.provider.name"] == "scripted"
        assert span.attributes["gen_ai.agent.id"] == "billing"
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
