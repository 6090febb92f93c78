"""The app's run store: its memory keeps every live run and only the latest ended
ones (``MemoryRunStore(keep=n)``, ``regiment serve --keep-runs``), so a service that
runs for months does not grow without end (a journal still answers about the rest);
and a store that fails ends that run, not the service."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.cli import run_async
from regiment.errors import ConfigError
from regiment.hierarchy import Event
from regiment.serve import MemoryRunStore, RunRecord, create_app

from .sse import frames
from .stores import WrappedStore
from .teams import Stuck, stuck_team, support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 88213?"
SCAN = "Please scan the warehouse for order 55001."
REFUND = str(Path(__file__).parents[2] / "examples" / "refund" / "team.toml")


async def _post(c: httpx.AsyncClient, goal: str = GOAL) -> str:
    posted = await c.post("/runs?wait=true", json={"goal": goal})
    assert posted.json()["status"] == "completed", posted.text
    run_id: str = posted.json()["run_id"]
    return run_id


async def test_past_keep_the_run_that_ended_first_is_forgotten() -> None:
    store = MemoryRunStore(keep=2)
    async with (
        serving(create_app(support_team(), store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        ids = [await _post(c) for _ in range(4)]
        listed = [r["run_id"] for r in (await c.get("/runs")).json()["runs"]]
        assert listed == [ids[3], ids[2]]  # newest first
        gone = await c.get(f"/runs/{ids[0]}")
        assert gone.status_code == 404
        assert "keeps only its latest ended runs" in gone.json()["detail"]
        assert "journal" in gone.json()["detail"]
        assert (await c.get(f"/runs/{ids[1]}/events")).status_code == 404
        kept = (await c.get(f"/runs/{ids[3]}")).json()
        assert kept["status"] == "completed"
        assert kept["answer"]
    assert [store.get(run_id) is None for run_id in ids] == [True, True, False, False]


async def test_a_live_run_is_never_forgotten_however_many_end_after_it() -> None:
    stuck, store = Stuck(), MemoryRunStore(keep=1)
    async with (
        serving(create_app(stuck_team(stuck), store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        live = (await c.post("/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
        ended = [await _post(c) for _ in range(3)]
        assert (await c.get(f"/runs/{live}")).json()["status"] == "running"
        assert [store.get(run_id) is None for run_id in ended] == [True, True, False]
        # Once it ends, it is the latest ended run: the one before it goes.
        await c.post(f"/runs/{live}/cancel")
        async with c.stream("GET", f"/runs/{live}/events") as response:
            last = [f async for f in frames(response) if f.comment is None][-1]
        assert last.event == "RunFailed"
        assert (await c.get(f"/runs/{live}")).json()["status"] == "cancelled"
        assert store.get(ended[-1]) is None


async def test_with_a_journal_a_forgotten_run_is_answered_from_it(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    store = MemoryRunStore(keep=1)
    async with (
        serving(create_app(support_team(), journal=journal, store=store)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        first, second = await _post(c), await _post(c)
        assert store.get(first) is None
        shown = (await c.get(f"/runs/{first}")).json()
        assert shown["status"] == "completed"
        assert shown["answer"]
        listed = {r["run_id"] for r in (await c.get("/runs")).json()["runs"]}
        assert listed == {first, second}
        async with c.stream("GET", f"/runs/{first}/events") as response:
            events = [f.event for f in [f async for f in frames(response)] if f.event]
        assert events[0] == "RunStarted"
        assert events[-1] == "RunCompleted"


@pytest.mark.parametrize("keep", [0, float("nan"), 2.5, True])
def test_keep_below_one_or_not_whole_is_refused(keep: int) -> None:
    # nan was taken, and no ended run was ever forgotten: the store grew without bound.
    with pytest.raises(ConfigError, match="keep at least the last ended run"):
        MemoryRunStore(keep=keep)


async def test_serve_refuses_keep_runs_below_one() -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["serve", REFUND, "--keep-runs", "0", "--model", "scripted"]
    assert await run_async(argv, stdout=out, stderr=err, environ={}) == 2
    # It said "keep=0: ... (keep >= 1, ...)", the library's argument, not the flag.
    assert err.getvalue() == (
        "regiment: error: --keep-runs 0: keep at least the last ended run (a whole number >= 1)\n"
    )


class _FailingStore(WrappedStore):
    """A user's ``RunStore`` (here a memory one) whose first run's third append fails,
    as a store backed by a database that just went away would."""

    def __init__(self) -> None:
        super().__init__()
        self._first: str | None = None

    def add(self, run_id: str, goal: str, session: str | None) -> RunRecord:
        self._first = self._first or run_id
        return super().add(run_id, goal, session)

    def append(self, run_id: str, event: Event) -> int:
        record = self.get(run_id)
        if run_id == self._first and record is not None and len(record.events) >= 2:
            raise OSError("the run store's database went away")
        return super().append(run_id, event)


async def test_a_store_that_fails_ends_that_run_as_failed_and_the_app_serves_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="regiment.serve")
    async with (
        serving(create_app(support_team(), store=_FailingStore())) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        with anyio.fail_after(30):
            broken = await c.post("/runs?wait=true", json={"goal": GOAL})
        assert broken.status_code == 200, broken.text
        view = broken.json()
        assert view["status"] == "failed"
        assert view["error"] == "OSError: the run store's database went away"
        assert view["answer"] is None
        # The service goes on: the next run completes.
        assert (await c.get("/health")).json() == {"status": "ok"}
        with anyio.fail_after(30):
            assert await _post(c)
    logged = [r for r in caplog.records if "the service failed while driving it" in r.message]
    assert len(logged) == 1
    assert logged[0].exc_info is not None
    assert getattr(logged[0], "run_id", None) == view["run_id"]
