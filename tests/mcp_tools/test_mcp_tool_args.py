"""``regiment mcp``'s tools refuse an argument they do not take. The SDK dropped it
without a word: ``run(goal, session=...)`` ran with no session, and the client (a model,
often) went on believing the run had one."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp.types import CallToolResult, TextContent

from regiment.cli._mcp_serve import team_server
from tests.serve.teams import support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"


def _text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_run_and_resume_refuse_an_argument_they_do_not_take(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    async with (
        support_team().start(journal=journal) as running,
        Client(team_server(running, journal=journal)) as client,
    ):
        refused = await client.call_tool("run", {"goal": GOAL, "session": "s1", "budget": 3})
        assert refused.is_error
        assert _text(refused).endswith(
            "run takes one argument, 'goal', not 'session', 'budget': call it with "
            '{"goal": "..."} alone; nothing was run'
        )
        resumed = await client.call_tool("resume", {"run_id": "run-1-x", "force": True})
        assert resumed.is_error
        assert "resume takes one argument, 'run_id', not 'force'" in _text(resumed)
        assert running.journal is not None
        assert list(await running.journal.list_runs()) == []  # nothing was run
        ran = await client.call_tool("run", {"goal": GOAL})  # as it takes it: it runs
        assert not ran.is_error, _text(ran)
        assert _text(ran) == "order 77120: shipped 12 days ago"


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("run", {}, "run takes one argument, 'goal', a string, and 'goal' is missing"),
        ("run", {"goal": 7}, "run takes one argument, 'goal', a string, and 'goal' is not a"),
        ("resume", {}, "resume takes one argument, 'run_id', a string, and 'run_id' is missing"),
    ],
)
async def test_a_call_without_its_one_argument_is_told_what_to_send(
    tmp_path: Path, tool: str, arguments: dict[str, object], says: str
) -> None:
    # The SDK answered with pydantic's "1 validation error for runArguments ... Field
    # required [type=missing, ...] For further information visit https://errors.pydantic..."
    journal = str(tmp_path / "runs.db")
    async with (
        support_team().start(journal=journal) as running,
        Client(team_server(running, journal=journal)) as client,
    ):
        refused = await client.call_tool(tool, arguments)
        assert refused.is_error
        text = _text(refused)
        assert text.startswith(says), text
        takes = "goal" if tool == "run" else "run_id"
        assert text.endswith(f'call it with {{"{takes}": "..."}}; nothing was run'), text
        assert "pydantic" not in text
        assert running.journal is not None
        assert list(await running.journal.list_runs()) == []  # nothing was run
