"""Content capture off, a run through the service (``create_app`` under real uvicorn,
asked over httpx): no user text (the goal, a tool's arguments and result, a model's
reply, a check's explanation, an exception's message) in any span, span event or log
record exported over real OTLP, though the caller gets the run's own events."""

from __future__ import annotations

import json
import logging

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from regiment.telemetry import Telemetry, configure_tracing
from tests.telemetry._pii_team import pii_team
from tests.telemetry.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.anyio


async def test_capture_off_keeps_user_text_out_of_a_served_runs_export(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("svc", endpoint=receiver.endpoint, set_global=False, logs=True)
        team, goal, marker = pii_team(Telemetry(handle.provider, capture_content=False))
        with caplog.at_level(logging.DEBUG, "regiment"):
            async with serving(create_app(team)) as url, httpx.AsyncClient(base_url=url) as c:
                ran = (await c.post("/runs?wait=true", json={"goal": goal})).json()
                events = await c.get(f"/runs/{ran['run_id']}/events")
        handle.shutdown()
        spans, logs = receiver.spans(), receiver.logs()
    assert ran["status"] == "failed"
    assert marker in events.text  # the caller's own run: its events hold its text
    assert {"execute_tool lookup", "verify", "plan planner", "synthesize"} <= {
        s.name for s in spans
    }
    assert any(s.attributes.get("regiment.plan.replan") for s in spans)  # it replanned
    assert any(s.name == "invoke_agent pii" for s in spans)
    texts = [
        json.dumps([s.name, s.status_message, s.attributes, s.events], default=str) for s in spans
    ]
    texts += [f"{log.body} {log.attributes}" for log in logs]
    assert [text for text in texts if marker in text] == []
