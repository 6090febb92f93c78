"""``create_app(..., journal=...)``: runs survive a restart of the server. A run
finished before the restart is listed, shown and replayed from the journal (a
SQLite file), with the same event numbers, honouring ``Last-Event-ID``."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import Lease, SqliteJournal
from regiment.serve import MemoryRunStore, create_app

from .sse import run_events
from .teams import Stuck, stuck_team, support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 88213?"
SCAN = "Please scan the warehouse for order 55001."


async def test_a_run_from_before_a_restart_is_listed_shown_and_replayed(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    async with (
        serving(create_app(support_team(), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        posted = await c.post("/runs?wait=true", json={"goal": GOAL, "session": "s-1"})
        assert posted.status_code == 200
        before = posted.json()
        live = await run_events(c, before["run_id"])
        first = live[:3]  # a client read three events, then the server went away
    assert before["status"] == "completed"
    assert live[-1].event == "RunCompleted"
    run_id = before["run_id"]

    # A new process: a new team object and app over the same file.
    async with (
        serving(create_app(support_team(), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        listed = (await c.get("/runs")).json()["runs"]
        assert listed == [{"run_id": run_id, "goal": GOAL, "session": "s-1", "status": "completed"}]
        assert (await c.get("/runs?status=failed")).json() == {"runs": []}
        shown = (await c.get(f"/runs/{run_id}")).json()
        for key in ("answer", "output", "usage", "plans", "steps", "committed", "events"):
            assert shown[key] == before[key], key
        assert shown["status"] == "completed"
        replayed = await run_events(c, run_id)
        assert replayed == live  # same ids, types and data as when it ran
        rest = await run_events(c, run_id, last=first[-1].id)
        assert first + rest == live
        ended = await c.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(len(live))})
        assert ended.status_code == 204  # nothing more, ever: EventSource stops reconnecting
        assert (await c.get("/runs/run-unknown")).status_code == 404
        # A new run in the restarted process is live, and listed beside the old one.
        new = (await c.post("/runs?wait=true", json={"goal": GOAL})).json()
        ids = [r["run_id"] for r in (await c.get("/runs")).json()["runs"]]
        assert sorted(ids) == sorted([run_id, new["run_id"]])

    # The file is a journal like any other: it holds both runs.
    opened = await SqliteJournal.open(journal)
    try:
        assert {r.run_id for r in await opened.list_runs()} == {run_id, new["run_id"]}
    finally:
        await opened.close()


async def test_a_cancelled_run_is_replayed_to_its_end_after_a_restart(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    stuck = Stuck()
    async with (
        serving(create_app(stuck_team(stuck), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
        assert (await c.post(f"/runs/{run_id}/cancel")).status_code == 202
        live = await run_events(c, run_id)
        view = (await c.get(f"/runs/{run_id}")).json()
    assert stuck.cancelled.is_set()
    assert live[-1].event == "RunFailed"
    async with (
        serving(create_app(stuck_team(Stuck()), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        shown = (await c.get(f"/runs/{run_id}")).json()
        assert (shown["status"], shown["error"], shown["events"]) == (
            "cancelled",
            view["error"],
            view["events"],
        )
        assert await run_events(c, run_id) == live  # ends as it ended live: RunFailed(RunCancelled)


async def test_a_journal_that_cannot_begin_a_run_answers_503_and_starts_nothing(
    tmp_path: Path,
) -> None:
    journal = await SqliteJournal.open(str(tmp_path / "runs.db"))
    store = MemoryRunStore()
    # The owner's journal: the app leaves it open, and here it is closed under the service.
    app = create_app(support_team(), journal=journal, store=store)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        fine = await c.post("/runs?wait=true", json={"goal": GOAL})
        assert fine.json()["status"] == "completed"
        await journal.close()
        refused = await c.post("/runs?wait=true", json={"goal": GOAL})
        assert refused.status_code == 503, refused.text
        body = refused.json()
        assert body["error"] == "journal unavailable"
        assert "closed" in body["detail"]
        assert "the run was not started" in body["detail"]
        assert [r.run_id for r in store.list()] == [fine.json()["run_id"]]
        # Reading from the journal fails the same way, as JSON, not a bare 500.
        listed = await c.get("/runs")
        assert listed.status_code == 503
        assert listed.json()["error"] == "journal unavailable"


class _HeldEnd(SqliteJournal):  # type: ignore[misc]  # (final: a test-only double)
    """A real SQLite journal that holds the release of a lease (which commits what the
    lease wrote, the run's end too, then lets the run go) until ``go``."""

    holding: ClassVar[anyio.Event]
    go: ClassVar[anyio.Event]

    async def release(self, lease: Lease) -> None:
        _HeldEnd.holding.set()
        await _HeldEnd.go.wait()
        await super().release(lease)


async def test_a_run_is_answered_completed_only_once_its_journal_has_its_end(
    tmp_path: Path,
) -> None:
    # The end was told (a ?wait=true request answered, followers sent RunCompleted) as
    # soon as the engine emitted it, before the run's journal was closed: a service
    # killed in between had answered 'completed' for a run its journal listed as
    # running (2 of 280 answered runs, SIGKILL in a burst of 300).
    _HeldEnd.holding, _HeldEnd.go = anyio.Event(), anyio.Event()
    journal = await _HeldEnd.open(tmp_path / "runs.db")
    answers: list[httpx.Response] = []
    try:
        async with (
            serving(create_app(support_team(), journal=journal)) as url,
            httpx.AsyncClient(base_url=url) as c,
            anyio.create_task_group() as tg,
        ):

            async def post() -> None:
                answers.append(await c.post("/runs?wait=true", json={"goal": GOAL}))

            tg.start_soon(post)
            await _HeldEnd.holding.wait()
            (listed,) = (await c.get("/runs")).json()["runs"]
            shown = (await c.get(f"/runs/{listed['run_id']}")).json()
            assert (listed["status"], shown["status"], answers) == ("running", "running", [])
            _HeldEnd.go.set()
        (answer,) = answers
        assert answer.json()["status"] == "completed"
        assert (await journal.get_run(answer.json()["run_id"])).status == "completed"
    finally:
        await journal.close()
