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
