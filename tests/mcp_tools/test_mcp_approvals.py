"""``require_approval`` on a worker's MCP tools, against the real test MCP server: the
names are checked once the server listed its tools, the calls pause like local ones
(approve, resume), and ``--approve ask`` asks for them on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from regiment.cli._ask import TerminalApprover, asking
from regiment.errors import ConfigError
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import Approve, MCPServer, tool
from tests.cli.helpers import terminal

from .brain import Brain, plan_json
from .conftest import SERVER_COMMAND

pytestmark = pytest.mark.anyio


@tool
def note(text: str) -> str:
    """Write a note."""
    return text


async def _add(
    description: str, results: list[ToolResultPart], request: ModelRequest
) -> ModelResponse | str:
    if not results:
        return tool_call_response("calc_add", {"a": 2, "b": 40})
    return f"the sum is {results[0].content}"


def _team(require: list[str]) -> Team:
    server = MCPServer.stdio(SERVER_COMMAND, name="calc", prefix="calc_")
    model = ScriptedModel(Brain([plan_json({"description": "add 2 and 40"})], work=_add))
    worker = Worker(
        name="adder",
        description="adds numbers",
        model=model,
        tools=[note, server],
        require_approval=require,
    )
    return Team(name="t", planner=Planner(model=model), workers=[worker])


async def test_an_mcp_tool_needing_approval_pauses_and_resumes_with_the_decision(
    tmp_path: Path,
) -> None:
    journal = str(tmp_path / "runs.db")
    async with _team(["calc_add", "note"]).start(journal=journal) as first:
        paused = await first.run("add two numbers")
    assert paused.status == "paused"
    (request,) = paused.pending_approvals
    assert (request.tool_name, request.arguments) == ("calc_add", {"a": 2, "b": 40})
    assert request.worker == "t/adder"

    async with _team(["calc_add", "note"]).start(journal=journal) as second:
        await second.approve(request.request_id, Approve(), by="ana")
        result = await second.resume(paused.run_id)
    assert result.status == "completed"
    (step,) = result.steps
    assert step.output == 'the sum is {"result":42}'


async def test_an_unknown_name_is_a_config_error_listing_the_mcp_tools_too() -> None:
    team = _team(["calc_add", "calc_mul"])  # built fine: MCP tools are listed at start
    with pytest.raises(ConfigError) as caught:
        async with team.start():
            pass
    message = str(caught.value)
    assert "worker 'adder': require_approval names tool 'calc_mul'" in message
    assert "its tools are: note, calc_add, calc_half, calc_shout" in message


def test_a_worker_without_mcp_servers_still_refuses_an_unknown_name_at_once() -> None:
    model = ScriptedModel(["unused"])
    with pytest.raises(ConfigError, match="calc_add"):
        Worker(name="w", description="d", model=model, tools=[note], require_approval=["calc_add"])


async def test_approve_ask_asks_for_an_mcp_tool_on_the_terminal() -> None:
    err = io.StringIO()
    with terminal(b"y\n") as stdin:
        team = asking(_team(["calc_add"]), TerminalApprover(stdin, err))
        result = await team.run("add two numbers")
    assert result.status == "completed"
    assert result.steps[0].output == 'the sum is {"result":42}'
    assert 'approval needed (step s1): calc_add({"a": 2, "b": 40})' in err.getvalue()
