"""A run whose Ray cluster went away (``ClusterLost``), journaled, stopped unfinished and a
resume finishes it: the journal lists it ``stalled``, so does a service's ``GET /runs``,
and ``regiment run`` exits 5 (stopped, resumable). The three read one rule,
``regiment.hierarchy.stopped_resumably``; this pins that they agree. (Here a worker's
model raises ``ClusterLost``, as one served from a lost cluster would: the Ray-placed case
is tests/ray/test_ray_cluster_lost.py.)"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import httpx2 as httpx
import msgspec
import pytest

from examples.service.serving import serving
from regiment.config import load_team
from regiment.hierarchy import RunFailed, event_from_json, stopped_resumably
from regiment.journal import open_journal
from regiment.serve import create_app
from tests.cli.helpers import run_cli

from .sse import run_events

pytestmark = pytest.mark.anyio

_BRAIN = """
import json

from regiment.errors import ClusterLost
from regiment.models import ModelRequest, ModelResponse, text_response


def gone(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        step = {"id": "s1", "description": "Hold 88213", "worker": "holder", "depends_on": []}
        return text_response(json.dumps({"steps": [step]}))
    raise ClusterLost("worker 'holder': the Ray cluster at 10.0.0.5:6379 went away mid-step")
"""


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


def _team_file(directory: Path) -> Path:
    module = f"lost_brains_{uuid.uuid4().hex[:8]}"  # unique: imported modules are cached
    (directory / f"{module}.py").write_text(_BRAIN, encoding="utf-8")
    team = directory / "team.toml"
    team.write_text(
        f'name = "holding"\nmodel = "scripted"\nbrain = "{module}:gone"\n\n'
        '[[workers]]\nname = "holder"\ndescription = "Holds orders."\n',
        encoding="utf-8",
    )
    return team


async def _listed(journal: str) -> dict[str, str]:
    store = await open_journal(journal)
    try:
        return {info.run_id: info.status for info in await store.list_runs()}
    finally:
        await store.close()


async def test_the_journal_the_service_and_the_command_agree(tmp_path: Path) -> None:
    team_file, journal = _team_file(tmp_path), str(tmp_path / "runs.db")
    common = ("--journal", journal, "--app-dir", str(tmp_path))

    code, _, err = await run_cli("run", str(team_file), "hold order 88213", *common, "--plain")
    assert code == 5, err  # stopped, resumable
    assert "regiment: run stopped, resumable: ClusterLost: " in err.splitlines()[-1]
    code, out, _ = await run_cli("runs", "--json", "--journal", journal)
    assert code == 0
    (by_command,) = [json.loads(line) for line in out.splitlines()]
    assert by_command["status"] == "stalled"

    async with (
        serving(create_app(load_team(team_file), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        posted = (await c.post("/runs?wait=true", json={"goal": "hold order 88213"})).json()
        served = posted["run_id"]
        shown = (await c.get(f"/runs/{served}")).json()
        listed = (await c.get("/runs", params={"status": "stalled"})).json()["runs"]
        streamed = await run_events(c, served)
    assert shown["status"] == "stalled"
    assert {r["run_id"] for r in listed} == {by_command["run_id"], served}
    assert await _listed(journal) == {by_command["run_id"]: "stalled", served: "stalled"}

    assert posted["status"] == "stalled"

    # The rule itself, read of the run's last event as the service streamed it.
    assert streamed[-1].event == "RunFailed"
    last = event_from_json(json.dumps(streamed[-1].data))
    assert isinstance(last, RunFailed)
    assert last.error_type == "ClusterLost"
    assert stopped_resumably(last, journaled=True)
    assert not stopped_resumably(last, journaled=False)  # nothing could resume it
    other = msgspec.structs.replace(last, error_type="StepFailed")
    assert not stopped_resumably(other, journaled=True)  # failed for good
    assert not stopped_resumably(None, journaled=True)
