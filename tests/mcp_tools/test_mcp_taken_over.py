"""``regiment mcp --journal J``: a run that another process takes over while its step
works ends its tool call with an error result that says plainly the run goes on there,
who runs it, and how to follow it, as ``regiment run`` says in its last line (exit 4).

It said "JournalError: run ... was taken over ..." (or, as the run's last event came
first, "the run failed: LeaseLost: ..."): a failure, though the run had not failed, and
its `regiment show RUN_ID` left out the server's journal, so it read the default one.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.types import CallToolResult

from tests.cli.helpers import write_team
from tests.journal.test_lease_lost import take_over

from .test_mcp_serve_pause import served, text_of

pytestmark = pytest.mark.anyio


# The server is a subprocess on asyncio whichever loop the client uses: one is enough.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_run_taken_over_is_an_error_result_saying_it_goes_on_elsewhere(
    tmp_path: Path,
) -> None:
    team = write_team(tmp_path, "stuck")  # its one step waits for ever
    journal = str(tmp_path / "runs.db")
    planned = anyio.Event()
    results: list[CallToolResult] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        planned.set()  # "plan v1: 1 step": the run is in the journal, its step works

    options = ("--journal", journal, "--app-dir", str(tmp_path))
    async with served(*options, team=str(team)) as session:

        async def call() -> None:
            results.append(
                await session.call_tool("run", {"goal": "wait"}, progress_callback=on_progress)
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await planned.wait()
            run_id = await take_over(journal)
        # the server learns it at its next heartbeat (within 10 s) and answers the call
    (result,) = results
    assert result.is_error
    text = text_of(result)
    assert text.startswith(
        f"Error executing tool run: the run goes on elsewhere: run {run_id} was taken over by another process, "
        "pid 4242 on elsewhere (elsewhere:4242:1), which runs it now"
    ), text
    assert f"(`regiment show --journal {journal} {run_id}` shows it; in code, " in text, text
    assert "JournalError" not in text
    assert "failed" not in text
