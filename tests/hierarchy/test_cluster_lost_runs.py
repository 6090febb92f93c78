"""A step that fails with ``ClusterLost`` (the Ray cluster it needed went away) ends
its run at once, spending no replan; a journaled run is left unfinished, with a
message naming `regiment resume RUN_ID`, and a resume finishes it; a run without a
journal says it cannot be resumed. (Here a worker's model raises it, as one served
from that cluster would: the Ray-placed case is tests/ray/test_ray_cluster_lost.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regiment.errors import ClusterLost, StepFailed
from regiment.hierarchy import Planner, Replanned, RunFailed, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response

pytestmark = pytest.mark.anyio

_GONE = "the Ray cluster at 10.0.0.5:6379 went away mid-step"


def _planner(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        step = {"id": "s1", "description": "Hold 88213", "worker": "holder", "depends_on": []}
        return text_response(json.dumps({"steps": [step]}))
    return text_response("order 88213 is held")


def _gone(request: ModelRequest) -> ModelResponse:
    raise ClusterLost(f"worker 'holder': {_GONE} (its replica died); no replica is left")


def _team(model: ScriptedModel) -> Team:
    worker = Worker(name="holder", description="Holds orders.", model=model)
    return Team(name="holding", planner=Planner(model=ScriptedModel(_planner)), workers=[worker])


async def test_an_unjournaled_run_fails_at_once_saying_it_cannot_be_resumed() -> None:
    team = _team(ScriptedModel(_gone))
    async with team.start() as running, running.stream("hold order 88213") as events:
        seen = [event async for event in events]
    assert not [e for e in seen if isinstance(e, Replanned)]
    last = seen[-1]
    assert isinstance(last, RunFailed)
    assert last.error_type == "ClusterLost"
    assert _GONE in last.message
    assert "the run has no journal, so it cannot be resumed" in last.message


async def test_a_journaled_run_stops_unfinished_and_a_resume_finishes_it(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    async with _team(ScriptedModel(_gone)).start(journal=journal) as running:
        with pytest.raises(StepFailed) as failed:
            await running.run("hold order 88213")
        assert isinstance(failed.value.__cause__, ClusterLost)
        assert failed.value.fatal
        assert failed.value.failed is not None
        run_id = failed.value.failed.run_id
        said = str(failed.value)  # how to resume, in code and typed anywhere
        assert f"running.resume({run_id!r}) on a team started with that journal" in said
        assert f"`regiment resume --journal {journal} {run_id}`" in said
        assert running.journal is not None
        assert (await running.journal.get_run(run_id)).status == "stalled"
    back = ScriptedModel([text_response("held")])
    async with _team(back).start(journal=journal) as running:
        result = await running.resume(run_id)
    assert result.status == "completed"
    assert result.steps[-1].output == "held"
    assert result.answer.startswith("order 88213 is held")
