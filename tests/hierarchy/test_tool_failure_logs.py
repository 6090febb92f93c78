"""A failed tool call's log line names the failure's type, never the user's data in it.

The line on ``regiment.worker`` quoted the call's error message: an exception's text
(``ValueError: no such customer ann@example.com``) or the arguments the model sent, as
an invalid-arguments error quotes them (``(got "ann@example.com")``). An exported log
record carries the line whatever the content capture says. The model, the
``ToolFailed`` event and the step's report still have the message whole.
"""

from __future__ import annotations

import logging

import pytest

from regiment._json import JsonObject
from regiment.hierarchy import Planner, Team, ToolFailed, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart
from regiment.models import tool_call_response as call
from regiment.tools import tool

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

SECRET = "ann@example.com"


@tool
def find(email: str) -> str:
    """Find a customer by email."""
    raise ValueError(f"no such customer {email}")


async def run_calling(arguments: JsonObject, caplog: pytest.LogCaptureFixture) -> str:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return call("find", arguments, call_id="c1") if not results else "not found"

    model = ScriptedModel(Brain([plan_json({"description": "find her"})], work=work))
    clerk = Worker(name="clerk", description="finds customers", model=model, tools=[find])
    team = Team(name="t", planner=Planner(model=model), workers=[clerk])
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await team.run("find the customer")
    (failed,) = [e for e in result.events if isinstance(e, ToolFailed)]
    assert SECRET in failed.message  # the event has it whole
    (record,) = [r for r in caplog.records if r.name == "regiment.worker"]
    assert all(SECRET not in r.getMessage() for r in caplog.records)
    return record.getMessage()


async def test_a_tool_that_raised_is_logged_by_its_class(caplog: pytest.LogCaptureFixture) -> None:
    assert await run_calling({"email": SECRET}, caplog) == "clerk s1: find failed: ValueError"


async def test_arguments_the_tool_refused_are_not_quoted_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logged = await run_calling({"mail": SECRET}, caplog)
    assert logged == "clerk s1: find failed: invalid_arguments"
