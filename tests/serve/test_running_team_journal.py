"""``create_app(running)`` with a ``RunningTeam`` answers from the journal the team was
started with: after the app is made again (a restart of the service around the same
team), a keyed retry finds its run there instead of answering 503 "journal unavailable"
for ever (its id was taken in the journal, and the app had none to find it in). A
journal the team's runs are not journaled in is refused where it is given. Real uvicorn,
a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import os
from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.errors import ConfigError
from regiment.journal import open_journal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

pytestmark = pytest.mark.anyio

PLAN = plan_json(step("s1", "billing", "credit 7 50"))
GOAL = {"goal": "credit order 7"}
KEY = {"Idempotency-Key": "running-7"}


async def test_the_app_of_a_running_team_answers_from_its_journal(journal: str) -> None:
    shop = Shop()
    async with shop_team(shop, PLAN).start(journal=journal) as running:
        async with serving(create_app(running)) as url, httpx.AsyncClient(base_url=url) as c:
            first = await c.post("/runs?wait=true", json=GOAL, headers=KEY)
            assert first.status_code == 200, first.text
            run_id = first.json()["run_id"]
        async with serving(create_app(running)) as url, httpx.AsyncClient(base_url=url) as c:
            again = await c.post("/runs?wait=true", json=GOAL, headers=KEY)
            assert again.status_code == 200, again.text
            assert again.headers["idempotent-replayed"] == "true"
            assert (again.json()["run_id"], again.json()["status"]) == (run_id, "completed")
            listed = (await c.get("/runs")).json()["runs"]
            assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "completed")]
            events = await c.get(f"/runs/{run_id}/events")  # replayed from the journal
            named = [line for line in events.text.splitlines() if line.startswith("event: ")]
            assert (named[0], named[-1]) == ("event: RunStarted", "event: RunCompleted"), named
    assert shop.refunds == [("credit:7", 50)]


async def test_a_journal_the_running_team_does_not_journal_in_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with shop_team(Shop(), PLAN).start() as unjournaled:
        with pytest.raises(ConfigError) as refused:
            create_app(unjournaled, journal=str(path))
        assert "the RunningTeam was started without a journal" in str(refused.value)
    other = await open_journal(str(tmp_path / "other.db"))
    try:
        async with shop_team(Shop(), PLAN).start(journal=str(path)) as running:
            with pytest.raises(ConfigError) as refused:
                create_app(running, journal=other)
            assert "another Journal than the one the RunningTeam journals" in str(refused.value)
            assert running.journal is not None
            create_app(running, journal=running.journal)  # its own: taken
    finally:
        await other.close()


async def test_a_path_or_url_of_another_database_is_refused_and_its_own_is_taken(
    journal: str, tmp_path: Path
) -> None:
    # A path or URL was taken as it was: the app answered from that database while the
    # team journaled its runs in its own, so a keyed retry ran again after a restart.
    other_file, other_url = str(tmp_path / "other.db"), f"{journal}x" if "://" in journal else ""
    async with shop_team(Shop(), PLAN).start(journal=journal) as running:
        assert running.journal is not None
        own = running.journal.where
        create_app(running, journal=journal)  # its own: taken
        if "://" not in journal:  # the same file, spelt otherwise: taken too
            (tmp_path / "link.db").symlink_to(journal)
            create_app(running, journal=tmp_path / "link.db")
            create_app(running, journal=_relative(journal))
        else:  # the same database, its URL spelt otherwise
            scheme, _, rest = journal.partition("://")
            create_app(
                running, journal=f"{'postgres' if scheme == 'postgresql' else scheme}://{rest}"
            )
        others = [other_file, other_url or "postgresql://ana:secret@db.example:5432/runs"]
        for other in others:
            with pytest.raises(ConfigError) as refused:
                create_app(running, journal=other)
            said = str(refused.value)
            assert f"the RunningTeam journals its runs in {own}, not there" in said, said
            assert "leave journal= out" in said
            assert "secret" not in said  # a password is never shown


def _relative(path: str) -> str:
    """``path`` relative to the working directory (``../..`` as it takes)."""
    return os.path.relpath(path)
