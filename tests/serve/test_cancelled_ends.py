"""A run cancelled (``POST /runs/{id}/cancel``) while a tool runs: its followers get the
cut tool call's end (``?live=true``) and the step's end before the closing
``RunFailed``, as a run that ends early otherwise tells them; the same numbered events
once read back from the journal after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from examples.service.team import support_brain
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel
from regiment.serve import create_app

from .sse import Frame, frames, run_events
from .teams import Stuck, stuck_team

pytestmark = pytest.mark.anyio

LIVE = ("TextDelta", "ToolCallStarted", "ToolCallFinished")
SCAN = "Please scan the warehouse for order 55001."


def _held_team(stuck: Stuck, go: anyio.Event) -> Team:
    """``stuck_team``, whose planner waits for ``go`` (its followers are on)."""
    (worker,) = stuck_team(stuck).workers
    assert isinstance(worker, Worker)

    async def brain(request: ModelRequest) -> ModelResponse:
        if request.role == "planner":
            await go.wait()
        return support_brain(request)

    planner = Planner(model=ScriptedModel(brain))
    return Team(name="support", planner=planner, workers=[worker])


async def _follow(
    c: httpx.AsyncClient, run_id: str, query: str, got: list[Frame], seen: anyio.Event
) -> None:
    """Follow the run's events into ``got``; ``seen`` once a tool call has started."""
    async with c.stream("GET", f"/runs/{run_id}/events{query}") as response:
        assert response.status_code == 200
        async for frame in frames(response):
            if frame.comment is None:
                got.append(frame)
            if frame.event == "RunStarted":
                seen.set()


def _data(frame: Frame) -> dict[str, Any]:
    assert frame.data is not None
    return frame.data


@pytest.mark.parametrize("journaled", [False, True], ids=["memory", "journal"])
async def test_a_cancelled_runs_followers_get_the_cut_call_and_step_ends(
    journaled: bool, tmp_path: Path
) -> None:
    journal = str(tmp_path / "runs.db") if journaled else None
    stuck, go = Stuck(), anyio.Event()
    live: list[Frame] = []
    plain: list[Frame] = []
    async with (
        serving(create_app(_held_team(stuck, go), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = str((await c.post("/runs", json={"goal": SCAN})).json()["run_id"])
        on_live, on_plain = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_follow, c, run_id, "?live=true", live, on_live)
            tg.start_soon(_follow, c, run_id, "", plain, on_plain)
            with anyio.fail_after(30):
                await on_live.wait()  # the followers are on
                await on_plain.wait()
                go.set()
                await stuck.started.wait()  # the tool's body runs
            assert (await c.post(f"/runs/{run_id}/cancel")).json()["cancelling"] is True
    kinds = [f.event for f in live]
    assert "ToolCallStarted" in kinds, kinds
    assert kinds[-3:] == ["ToolCallFinished", "StepErrored", "RunFailed"], kinds
    started = _data(live[kinds.index("ToolCallStarted")])
    finished, errored, failed = (_data(f) for f in live[-3:])
    assert finished["call_id"] == started["call_id"]
    assert finished["outcome"] == "cut"
    assert (errored["step_id"], errored["status"]) == (started["step_id"], "cancelled")
    assert failed["error_type"] == "RunCancelled"
    # The plain stream: the numbered events alone, the step's end among them.
    assert [f.event for f in plain] == [k for k in kinds if k not in LIVE]
    assert [f.id for f in plain] == list(range(1, len(plain) + 1))
    assert [f.id for f in live if f.id is not None] == [f.id for f in plain]
    if journal is None:
        return
    async with (
        serving(create_app(stuck_team(Stuck()), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        replayed = await run_events(c, run_id)
    assert [(f.id, f.event) for f in replayed] == [(f.id, f.event) for f in plain]
    assert replayed[-2].data == plain[-2].data  # the same step end, event n stays event n
