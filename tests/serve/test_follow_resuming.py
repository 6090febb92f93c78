"""A follower that connects to ``GET /runs/{id}/events`` while this same service is
resuming the run follows the resumed run live, under a real uvicorn and a real SQLite
journal whose write lock another connection holds (the resume waits in its lease's write).

It got the journal's view at once: the events so far, then a ``StreamEnd`` saying the run
was stalled (``POST .../resume`` finishes it, the resume that was under way) or, once the
lease was taken, ``"status": "running"`` in "another process", though it was this one.
Then it waited, with no frame and no response headers, as long as the resume's start
(the journal's busy timeout, 30 s), and so did ``GET /runs/{id}``, which then said
``stalled``. Now both answer at once: the run is ``running`` (here), and the stream sends
the events the journal has, then goes on with the resumed run's once it has started.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.sse import Frame, frames, run_events

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "refund 3 10"))


class _Said(logging.Handler):
    """Set as the service logs the messages it is given (all logged in the event loop)."""

    def __init__(self, *messages: str) -> None:
        super().__init__(logging.DEBUG)
        self.heard = {m: anyio.Event() for m in messages}

    def emit(self, record: logging.LogRecord) -> None:
        if (heard := self.heard.get(record.getMessage())) is not None:
            heard.set()


@contextmanager
def _hearing(*messages: str) -> Iterator[_Said]:
    """The service's logger, at DEBUG, tells the ``_Said`` it yields; as before after."""
    said, logger = _Said(*messages), logging.getLogger("regiment.serve")
    logger.addHandler(said)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield said
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)


@asynccontextmanager
async def _resume_held(
    c: httpx.AsyncClient, path: Path, url: str
) -> AsyncIterator[tuple[list[httpx.Response], sqlite3.Connection]]:
    """``POST url`` (a resume) made while another connection holds the journal's write
    lock, so the resume's first write (its lease) waits until the body rolls ``lock``
    back; ``resumed`` has the answer once the block has ended."""
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        async with anyio.create_task_group() as tg:
            resumed: list[httpx.Response] = []

            async def resume() -> None:
                resumed.append(await c.post(url))

            tg.start_soon(resume)
            yield resumed, lock
    finally:
        lock.close()


async def _paused_and_decided(path: Path, shop: Shop) -> tuple[str, int]:
    """A run paused for approval and approved, by a service that then stopped (this
    process keeps no record of it); its id and how many events it had."""
    async with (
        serving(create_app(shop_team(shop, PLAN), journal=str(path))) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as c,
    ):
        paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
        (asked,) = paused["pending_approvals"]
        await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        return paused["run_id"], len(await run_events(c, paused["run_id"]))


async def test_a_follower_during_a_resume_here_follows_the_resumed_run(tmp_path: Path) -> None:
    shop, path = Shop(), tmp_path / "runs.db"
    run_id, before = await _paused_and_decided(path, shop)
    read, waits = "run resuming: its journal read", "a follower waits for the run's resume here"
    early: list[Frame] = []  # what the follower got while the resume was held
    rest: list[Frame] = []
    app = create_app(shop_team(shop, PLAN), journal=str(path))
    with _hearing(read, waits) as said:
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
            stalled = (await c.get(f"/runs/{run_id}")).json()  # its journal is open too
            async with _resume_held(c, path, f"/runs/{run_id}/resume") as (resumed, lock):
                with anyio.fail_after(20):  # guards against a hang: the answers are asserted
                    await said.heard[read].wait()
                    # It waited as long as the resume's start, then said "stalled".
                    starting = (await c.get(f"/runs/{run_id}")).json()
                    async with c.stream("GET", f"/runs/{run_id}/events") as response:
                        got = (f async for f in frames(response) if f.comment is None)
                        early = [await anext(got) for _ in range(before)]
                        await said.heard[waits].wait()  # then it waits for the resume
                        assert not resumed  # the lock held the resume all along
                        lock.execute("ROLLBACK")
                        rest = [f async for f in got]
            (answer,) = resumed
            assert answer.status_code == 202, answer.text
            done = (await c.get(f"/runs/{run_id}")).json()
    assert (stalled["status"], starting["status"], done["status"]) == (
        "stalled",
        "running",  # this service runs it: its resume is under way
        "completed",
    )
    assert starting["events"] == before
    followed = early + rest
    assert [f.event for f in followed if f.event == "StreamEnd"] == []
    last = followed[-1]
    assert last.data is not None
    assert (last.event, last.data["result"]["status"]) == ("RunCompleted", "completed")  # type: ignore[index]
    ids = [f.id for f in followed]
    assert ids == list(range(1, len(followed) + 1))  # the journal's numbers, none twice
    assert len(followed) > before  # past the pause: what the resumed run added
    assert shop.refunds == [("3", 10)]


async def test_a_run_paused_here_reads_running_while_its_resume_starts(tmp_path: Path) -> None:
    """This process's record of the paused run answered during the resume's start: it
    said ``stalled`` (its approvals decided), in ``GET /runs/{id}`` and ``GET /runs``."""
    shop, path = Shop(), tmp_path / "runs.db"
    read = "run resuming: its journal read"
    app = create_app(shop_team(shop, PLAN), journal=str(path))
    with _hearing(read) as said:
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as c:
            paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
            run_id, (asked,) = paused["run_id"], paused["pending_approvals"]
            await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
            before = (await c.get(f"/runs/{run_id}")).json()["status"]
            resuming = f"/runs/{run_id}/resume?wait=true"
            async with _resume_held(c, path, resuming) as (resumed, lock):
                with anyio.fail_after(20):  # guards against a hang: the answers are asserted
                    await said.heard[read].wait()
                    shown = (await c.get(f"/runs/{run_id}")).json()
                    (listed,) = (await c.get("/runs?limit=1")).json()["runs"]
                assert not resumed  # the lock held the resume all along
                lock.execute("ROLLBACK")
            (answer,) = resumed
            after = (await c.get(f"/runs/{run_id}")).json()["status"]
    assert before == "stalled"
    assert (shown["status"], listed["run_id"], listed["status"]) == ("running", run_id, "running")
    assert shown["events"] == paused["events"]
    assert (answer.json()["status"], after) == ("completed", "completed")
    assert shop.refunds == [("3", 10)]
