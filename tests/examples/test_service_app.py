"""The service's ASGI app, called in-process: routes, startup, and cancel on disconnect."""

from __future__ import annotations

import anyio
import pytest

from examples.service.app import App
from examples.service.asgi import lifespan, request
from examples.service.team import build_team, support_brain
from regiment.hierarchy import Event, StepDispatched
from regiment.models import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_routes_and_a_team_that_is_not_started() -> None:
    app = App(build_team(ScriptedModel(support_brain)))
    assert (await request(app, "GET", "/")).status == 404
    assert (await request(app, "POST", "/runs", b"status of order 1")).status == 503
    async with lifespan(app):
        answer = await request(app, "POST", "/runs", b"What is the status of order 77120?")
    assert answer.status == 200
    assert b'"answer":"order 77120: shipped 12 days ago"' in answer.body


async def test_a_client_that_leaves_cancels_its_run_and_others_go_on() -> None:
    started = anyio.Event()
    cancelled: list[int] = []
    tools_seen: list[str] = []

    def on_event(number: int, event: Event) -> None:
        if isinstance(event, StepDispatched):
            tools_seen.append(event.step_id)
            started.set()

    model = ScriptedModel(support_brain)
    app = App(build_team(model), on_event=on_event, on_cancel=cancelled.append)
    async with lifespan(app):
        gone = await request(
            app, "POST", "/runs", b"Please scan the warehouse for order 5.", leave=started
        )
        # The team is still serving: a later goal runs to its answer.
        after = await request(app, "POST", "/runs", b"What is the status of order 88213?")
    assert gone.status is None  # nothing was sent to a client that had left
    assert cancelled == [1]
    assert after.status == 200
    # The slow scan was asked for, and cancelled: its worker never got to answer after it.
    scans = [r for r in model.requests if "Scan the warehouse" in r.messages[0].text]
    assert len(scans) == 1
