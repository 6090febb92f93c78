"""A caller's W3C ``traceparent`` on ``POST /runs`` puts the run in the caller's trace, and
one on ``POST /runs/{id}/resume`` is linked from the resumed root; spans exported over real
OTLP/HTTP by a real uvicorn-served app."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from regiment.telemetry import Telemetry, configure_tracing
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.telemetry.otlp_receiver import OtlpReceiver, ReceivedSpan

from .teams import support_team

pytestmark = pytest.mark.anyio

GOAL = "What is the status of order 77120?"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def _roots(spans: tuple[ReceivedSpan, ...], name: str) -> dict[str, ReceivedSpan]:
    return {str(s.attributes["regiment.run.id"]): s for s in spans if s.name == name}


async def test_a_posted_run_joins_the_trace_its_caller_names() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("svc", endpoint=receiver.endpoint, set_global=False)
        team = dataclasses.replace(support_team(), telemetry=Telemetry(handle.provider))
        async with serving(create_app(team)) as url, httpx.AsyncClient(base_url=url) as c:
            caller = {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
            waited = await c.post("/runs?wait=true", json={"goal": GOAL}, headers=caller)
            assert waited.json()["trace_id"] == CALLER_TRACE
            accepted = await c.post("/runs", json={"goal": GOAL}, headers=caller)
            bad = {"traceparent": "00-not-a-trace-01"}
            own = await c.post("/runs?wait=true", json={"goal": GOAL}, headers=bad)
            async with c.stream("GET", f"/runs/{accepted.json()['run_id']}/events") as events:
                async for _ in events.aiter_lines():  # to the end of the run
                    pass
        handle.shutdown()
        spans = receiver.spans()

    roots = _roots(spans, "invoke_agent support")
    for run_id in (waited.json()["run_id"], accepted.json()["run_id"]):
        root = roots[run_id]
        assert (root.trace_id, root.parent_span_id) == (CALLER_TRACE, CALLER_SPAN)
        inside = [s for s in spans if s.parent_span_id == root.span_id]
        assert {s.trace_id for s in inside} == {CALLER_TRACE}
    # no (valid) traceparent: a trace of its own, as before
    alone = roots[own.json()["run_id"]]
    assert alone.parent_span_id is None
    assert alone.trace_id == own.json()["trace_id"] != CALLER_TRACE


async def test_a_resume_stays_in_the_runs_trace_and_links_its_caller(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("svc", endpoint=receiver.endpoint, set_global=False)
        team = shop_team(Shop(), plan_json(step("s1", "billing", "refund 3 10")))
        team = dataclasses.replace(team, telemetry=Telemetry(handle.provider))
        app = create_app(team, journal=str(tmp_path / "runs.db"))
        async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
            paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
            run_id = paused["run_id"]
            (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
            await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
            caller = {"traceparent": TRACEPARENT}
            resumed = await c.post(f"/runs/{run_id}/resume?wait=true", headers=caller)
            assert resumed.json()["status"] == "completed"
        handle.shutdown()
        spans = receiver.spans()

    first, second = sorted(
        (s for s in spans if s.name == "invoke_agent shop"),
        key=lambda s: "regiment.run.resume" in s.attributes,
    )
    assert second.trace_id == first.trace_id == paused["trace_id"]
    assert second.parent_span_id == first.span_id
    links = {(link.trace_id, link.span_id): dict(link.attributes) for link in second.links}
    assert links == {
        (first.trace_id, first.span_id): {"regiment.run.resume": 1},
        (CALLER_TRACE, CALLER_SPAN): {"regiment.run.resumed_by": True},
    }
