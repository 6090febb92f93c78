"""Two tool calls of one reply with the same id each run, and go back under ids of their own.

A server that is not the provider's own (an OpenAI-compatible one, a proxy) may give two
calls of one reply the same id. They were sent back as they came, two calls and two
results under one id, which the provider refuses on the next request (Claude's Messages
API: "tool_use ids must be unique"). Now each call runs and gets its own result; the
second gets ``<id>_2``, in the reply as the run keeps it and in the request that sends
it back. Over HTTP with each provider's official SDK against the stand-in, streamed and not.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.tools import tool

from ..models.standin import StandIn
from ..models.wires import Wire
from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

asked: list[str] = []


@tool
def lookup(city: str) -> str:
    """Today's weather for a city."""
    asked.append(city)
    return f"{city}: snow"


def _sent_back(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The ids of the calls of the last reply a request sends back, and of their results
    (a Messages API or a Chat Completions request)."""
    calls: list[str] = []
    results: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        if message["role"] == "assistant":
            calls = [c["id"] for c in message.get("tool_calls") or []]
            if isinstance(content, list):
                calls += [b["id"] for b in content if b["type"] == "tool_use"]
            results = []
        elif message["role"] == "tool":
            results.append(message["tool_call_id"])
        elif isinstance(content, list):
            results += [b["tool_use_id"] for b in content if b.get("type") == "tool_result"]
    return calls, results


@pytest.mark.parametrize("stream", [True, False])
async def test_calls_of_one_reply_with_one_id_each_run_under_an_id_of_their_own(
    wire: Wire, api: StandIn, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    asked.clear()
    model = wire.make(api, stream, 0)
    twice = (("call_7", "lookup", '{"city": "Oslo"}'), ("call_7", "lookup", '{"city": "Bergen"}'))
    api.queue(wire.reply("", twice), wire.reply("Oslo and Bergen: snow", ()))
    brain = Brain([plan_json({"description": "weather"})])
    worker = Worker(name="w", description="Knows the weather.", model=model, tools=[lookup])
    team = Team(name="t", planner=Planner(model=ScriptedModel(brain)), workers=[worker])
    with caplog.at_level(logging.WARNING, logger="regiment.models"):
        async with model:
            result = await team.run("weather in Oslo and Bergen")
    assert result.status == "completed"
    assert sorted(asked) == ["Bergen", "Oslo"]  # each call ran
    (report,) = result.steps
    assert [(o.call_id, o.content) for o in report.tool_outcomes] == [
        ("call_7", "Oslo: snow"),
        ("call_7_2", "Bergen: snow"),
    ]
    assert _sent_back(api.requests[1].body) == (["call_7", "call_7_2"], ["call_7", "call_7_2"])
    (warned,) = [r.getMessage() for r in caplog.records if "tool calls of one reply" in r.message]
    assert "'call_7' -> 'call_7_2'" in warned
