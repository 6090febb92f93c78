"""``regiment mcp``: progress across a replan, and a run that pauses for approvals
(with ``--journal``: decided with ``regiment approve``, finished with the ``resume``
tool; without one: an error result saying it cannot go on)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.types import CallToolResult, TextContent

# Each test talks to ``regiment mcp`` in a process of its own (on the CLI's loop) through
# the MCP SDK's stdio client: this test's backend runs only that client, so once is enough.
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

ROOT = Path(__file__).resolve().parents[2]
TEAM = "examples/refund/team_approval.toml"  # every refund waits for approval
REFUND = "For order 77120 refund 80"  # eligible: the refund step asks for approval


@asynccontextmanager
async def served(*options: str, team: str = TEAM) -> AsyncIterator[ClientSession]:
    """``regiment mcp team *options`` over stdio, run from the clone's root."""
    env = get_default_environment()  # the SDK's minimal one; with this test's import path
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "regiment", "mcp", team, *options],
        cwd=str(ROOT),
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_progress_counts_the_steps_a_replan_kept() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with served() as session:
        # order 1002 is not eligible: s1's check fails, and plan v2 keeps s1 as done
        result = await session.call_tool(
            "run", {"goal": "refund order 1002"}, progress_callback=on_progress
        )
    assert not result.is_error, text_of(result)
    assert seen == [
        (0.0, 3.0, "plan v1: 3 steps"),
        (1.0, 3.0, "step s1 failed its check 'eligible'"),
        (1.0, 3.0, "plan v2: 3 steps"),
        (2.0, 3.0, "step s4 done by billing"),
        (3.0, 3.0, "step s5 done by comms"),
    ]


async def test_a_pause_without_a_journal_is_an_error_saying_what_to_do() -> None:
    async with served() as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["run"]
        result = await session.call_tool("run", {"goal": REFUND})
    assert result.is_error
    text = text_of(result)
    assert re.search(r"needs a person's approval \(issue_refund \(apr-[0-9a-f]+\)\)", text), text
    assert "keeps no journal" in text
    assert "--journal" in text


async def test_a_paused_run_is_decided_from_the_cli_and_finished_by_resume(
    tmp_path: Path,
) -> None:
    journal = str(tmp_path / "runs.db")
    async with served("--journal", journal) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["run", "resume"]
        paused = text_of(await session.call_tool("run", {"goal": REFUND}))
        found = re.search(r"run (run-\S+) waits for 1 approval: issue_refund \((apr-\w+)\)", paused)
        assert found, paused
        run_id, request = found.groups()
        assert f"regiment approve {run_id} REQUEST_ID --journal {journal}" in paused

        again = await session.call_tool("resume", {"run_id": run_id})  # not decided yet
        assert not again.is_error
        assert f"run {run_id} waits for 1 approval" in text_of(again)

        approve = [sys.executable, "-m", "regiment", "approve", run_id, request]
        done = await anyio.run_process([*approve, "--journal", journal], cwd=ROOT, check=False)
        assert done.returncode == 0, done.stderr.decode()
        # the team file was journaled with the run: the CLI could resume it by id alone
        assert (
            f"continue with: regiment resume --journal {journal} {run_id}" in done.stdout.decode()
        )

        finished = await session.call_tool("resume", {"run_id": run_id})
        assert not finished.is_error
        assert '"order_id":"77120","refunded":true' in text_of(finished)

        over = await session.call_tool("resume", {"run_id": run_id})
    assert over.is_error
    assert "has already finished (completed)" in text_of(over)
