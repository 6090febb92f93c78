"""A run posted as the server begins to stop (``regiment_stop_runs``, which
``regiment serve`` calls first thing): refused, or, if it was starting, cancelled,
so that no ``?wait=true`` request on it holds the stop until the run ends."""

from __future__ import annotations

from collections.abc import Callable

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import RunRecord, create_app

from .stores import WrappedStore
from .teams import Stuck, stuck_team

pytestmark = pytest.mark.anyio

SCAN = "Please scan the warehouse for order 55001."


async def test_a_run_posted_once_the_server_stops_is_503_and_not_started() -> None:
    # It started, and its ?wait=true request held the stop for as long as the run went on.
    stuck = Stuck()
    app = create_app(stuck_team(stuck))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/health")).status_code == 200  # (the lifespan is up)
        assert app.state.regiment_stop_runs() == 0
        refused = await c.post("/runs?wait=true", json={"goal": SCAN})
        listed = (await c.get("/runs")).json()
    assert refused.status_code == 503
    assert refused.json() == {
        "error": "stopping",
        "detail": "the service is stopping and starts no more runs: post it again once it is back",
    }
    assert listed == {"runs": []}
    assert not stuck.started.is_set()


class _StopsAsItAdds(WrappedStore):
    """A store that, as a run registers, has the server begin to stop (``stop``): the
    stop lands while the run is starting, before the app holds its cancel scope."""

    stop: Callable[[], int] = staticmethod(lambda: 0)

    def add(self, run_id: str, goal: str, session: str | None) -> RunRecord:
        record = super().add(run_id, goal, session)
        self.stop()
        return record


async def test_a_run_starting_as_the_server_begins_to_stop_is_cancelled() -> None:
    # The stop cancelled the runs it knew; one still starting went on, and its waiting
    # request held the stop until the run ended (here: never).
    store = _StopsAsItAdds()
    app = create_app(stuck_team(Stuck()), store=store)
    store.stop = app.state.regiment_stop_runs
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        done = await c.post("/runs?wait=true", json={"goal": SCAN})
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "cancelled"
