"""A run the service cancelled itself (``POST .../cancel``, a client hanging up on
``?wait=true``, the service stopping) keeps what it got to in its live record: its
plans, step reports, committed steps and usage, as a failed run's record does, with
or without a journal, and the same once read back from the journal after a restart."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.hierarchy import RunFailed, to_json
from regiment.serve import MemoryRunStore, create_app

from .sse import run_events
from .teams import Stuck, stuck_team

pytestmark = pytest.mark.anyio

SCAN = "Please scan the warehouse for order 55001."
GOT_TO = ("plans", "steps", "committed", "usage", "model_calls", "tool_calls")
How = Literal["cancel", "hang_up", "shutdown"]


async def _cancel(c: httpx.AsyncClient, stuck: Stuck, how: How) -> str:
    """Start a run whose step hangs, and have the service cancel it ``how``; its id."""
    if how == "hang_up":
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(c.post, "/runs?wait=true", json={"goal": SCAN}))
            await stuck.started.wait()
            tg.cancel_scope.cancel()  # the client hangs up mid-run
        await stuck.cancelled.wait()
        (run,) = (await c.get("/runs")).json()["runs"]
        return str(run["run_id"])
    run_id = str((await c.post("/runs", json={"goal": SCAN})).json()["run_id"])
    await stuck.started.wait()
    if how == "cancel":
        assert (await c.post(f"/runs/{run_id}/cancel")).json()["cancelling"] is True
    return run_id


async def _live(how: How, journal: str | None) -> tuple[str, dict[str, Any]]:
    """The cancelled run's id, and its record as this service has it (its view; after a
    shutdown, its last event, which the view is made of)."""
    stuck, store = Stuck(), MemoryRunStore()
    async with (
        serving(create_app(stuck_team(stuck), journal=journal, store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = await _cancel(c, stuck, how)
        if how != "shutdown":
            last = (await run_events(c, run_id))[-1]
            assert (last.event, (last.data or {})["error_type"]) == ("RunFailed", "RunCancelled")
            return run_id, (await c.get(f"/runs/{run_id}")).json()
    record = store.get(run_id)
    assert record is not None
    assert record.status == "cancelled"
    assert isinstance(record.events[-1], RunFailed)
    return run_id, dict(json.loads(to_json(record.events[-1])))


def _got_to(view: dict[str, Any]) -> dict[str, Any]:
    return {key: view[key] for key in GOT_TO}


@pytest.mark.parametrize("journaled", [False, True], ids=["memory", "journal"])
@pytest.mark.parametrize("how", ["cancel", "hang_up", "shutdown"])
async def test_a_run_the_service_cancelled_keeps_what_it_got_to(
    how: How, journaled: bool, tmp_path: Path
) -> None:
    journal = str(tmp_path / "runs.db") if journaled else None
    run_id, live = await _live(how, journal)
    # The step was in flight: its report (cancelled) and what the run spent are there.
    assert [plan["version"] for plan in live["plans"]] == [1]
    steps = [(s["step_id"], s["status"]) for s in live["steps"]]
    assert steps == [("s1", "cancelled")]
    assert live["usage"]["input_tokens"] > 0
    assert live["model_calls"] == 2  # the planner's, and the worker's that called the tool
    if journal is None:
        return
    async with (
        serving(create_app(stuck_team(Stuck()), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        shown = (await c.get(f"/runs/{run_id}")).json()
    assert (shown["status"], shown["answer"]) == ("cancelled", None)
    assert _got_to(shown) == _got_to(live)  # the same before and after the restart
