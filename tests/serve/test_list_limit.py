"""``GET /runs?limit=N`` (default ``LIST_LIMIT``) lists at most N runs: this process's,
then the journal's newest others, so a service whose journal holds every run it ever
made does not answer with all of them. (The limit capped only the journal's runs:
``?limit=1`` answered with every run of this process, and one more.)"""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app

from .teams import support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 88213?"


async def test_the_journals_runs_are_listed_newest_first_up_to_the_limit(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    async with support_team().start(journal=journal) as running:  # runs of an earlier process
        made = [(await running.run(f"{GOAL} ({n})")).run_id for n in range(5)]
    async with (
        serving(create_app(support_team(), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        listed = [r["run_id"] for r in (await c.get("/runs?limit=2")).json()["runs"]]
        assert listed == made[::-1][:2]
        everything = [r["run_id"] for r in (await c.get("/runs")).json()["runs"]]
        assert everything == made[::-1]  # five: under the default limit
        done = (await c.get("/runs?status=completed&limit=3")).json()["runs"]
        assert [r["run_id"] for r in done] == made[::-1][:3]
        assert (await c.get("/runs?status=paused&limit=3")).json() == {"runs": []}
        own = (await c.post("/runs?wait=true", json={"goal": GOAL})).json()["run_id"]
        mixed = [r["run_id"] for r in (await c.get("/runs?limit=2")).json()["runs"]]
        assert mixed == [own, made[-1]]  # this process's runs, then the journal's newest
        capped = [r["run_id"] for r in (await c.get("/runs?limit=1")).json()["runs"]]
        assert capped == [own]
        later = (await c.post("/runs?wait=true", json={"goal": GOAL})).json()["run_id"]
        listed = [r["run_id"] for r in (await c.get("/runs")).json()["runs"]]
        assert listed == [later, own, *made[::-1]]  # newest first, this process's too
        for digits in (30, 5000):  # no limit, not a 500 (int() refuses 5,000 digits)
            huge = await c.get("/runs?limit=" + "9" * digits)
            assert [r["run_id"] for r in huge.json()["runs"]] == listed
        for bad in ("0", "-1", "two", "1.5"):
            refused = await c.get(f"/runs?limit={bad}")
            assert refused.status_code == 422
            assert refused.json()["error"] == "invalid ?limit"


async def test_the_limit_caps_this_processs_own_runs_too() -> None:
    async with (
        serving(create_app(support_team())) as url,  # no journal: its own runs only
        httpx.AsyncClient(base_url=url) as c,
    ):
        made = [(await c.post("/runs?wait=true", json={"goal": GOAL})).json() for _ in range(3)]
        listed = [r["run_id"] for r in (await c.get("/runs?limit=2")).json()["runs"]]
        assert listed == [made[2]["run_id"], made[1]["run_id"]]  # the newest two
        done = (await c.get("/runs?status=completed&limit=1")).json()["runs"]
        assert [r["run_id"] for r in done] == [made[2]["run_id"]]
