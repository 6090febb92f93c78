"""Over HTTP (real uvicorn + httpx): the resolution of a person's edit that the call's
``tool_call`` guards rewrite or refuse says what ran, live and after a resume."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, step
from tests.hierarchy.test_guardrails_edited_calls import _capped

from .sse import run_events

pytestmark = pytest.mark.anyio

REWRITTEN = {"order_id": "9", "amount": 60}  # the guard makes order 9 order 1
REFUSED = {"order_id": "2", "amount": 500}  # the guard refuses more than 100


async def test_a_live_runs_resolutions_say_what_the_guards_made_of_the_edits() -> None:
    shop = Shop()
    plan = plan_json(
        step("s1", "billing", "refund 1 40"),
        step("s2", "billing", "refund 2 30"),
        step("s3", "slow", "slow"),
    )
    team, _ = _capped(shop, "tell_model", plan)
    edits = {"1": REWRITTEN, "2": REFUSED}
    answers: list[dict[str, object]] = []
    async with serving(create_app(team)) as url, httpx.AsyncClient(base_url=url) as c:
        run_id = (await c.post("/runs", json={"goal": "two refunds"})).json()["run_id"]
        resolved: list[dict[str, object]] = []
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for line in events.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line.removeprefix("data: "))
                if event["type"] == "ApprovalRequested":
                    request = event["request"]
                    edit = edits[str(request["arguments"]["order_id"])]
                    answer = await c.post(
                        f"/approvals/{request['request_id']}",
                        json={"decision": "edit", "arguments": edit, "by": "ana"},
                    )
                    assert answer.status_code == 200, answer.text
                    answers.append(answer.json())
                elif event["type"] == "ApprovalResolved":
                    resolved.append(event)
                    if len(resolved) == 2:
                        shop.release.set()
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "completed"
    assert shop.refunds == [("1", 60)]
    assert sorted(str(a["arguments"]) for a in answers) == sorted(map(str, edits.values()))
    for said in answers:  # it showed only the edit, as if it were what ran
        assert said["guarded"] == "pending", said
        verdict = str(said["verdict"])
        assert verdict.startswith("the call's tool_call guards (if any) judge the edit before")
        assert f"request {said['request_id']} in GET /runs/{run_id}/events says" in verdict
    by_order = {str(e["arguments"]["order_id"]): e for e in resolved}  # type: ignore[index]
    rewritten, refused = by_order["9"], by_order["2"]
    assert (rewritten["arguments"], rewritten["guarded"], rewritten["ran_arguments"]) == (
        REWRITTEN,
        "rewritten",
        {"order_id": "1", "amount": 60},
    )
    assert (refused["arguments"], refused["guarded"], refused["ran_arguments"]) == (
        REFUSED,
        "refused",
        None,
    )
    assert str(refused["guard_reason"]).endswith("guardrail 'cap' refused this call: over 100")


async def test_a_paused_runs_edit_is_resolved_with_the_verdict_on_its_resume(
    tmp_path: Path,
) -> None:
    shop = Shop()
    team, _ = _capped(shop, "tell_model", plan_json(step("s1", "billing", "refund 9 40")))
    app = create_app(team, journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
        assert paused["status"] == "paused", paused
        (listed,) = (await c.get("/approvals")).json()["approvals"]
        answer = await c.post(
            f"/approvals/{listed['request_id']}", json={"decision": "edit", "arguments": REWRITTEN}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["arguments"] == REWRITTEN  # the person's edit, as decided
        assert answer.json()["guarded"] == "pending"  # judged at the resume
        assert "judge the edit at the run's resume" in answer.json()["verdict"]
        resumed = await c.post(f"/runs/{paused['run_id']}/resume?wait=true")
        assert resumed.json()["status"] == "completed", resumed.text
        frames = await run_events(c, paused["run_id"])
    assert shop.refunds == [("1", 60)]
    (resolved,) = [f.data for f in frames if f.event == "ApprovalResolved"]
    assert resolved is not None
    assert (resolved["arguments"], resolved["guarded"], resolved["ran_arguments"]) == (
        REWRITTEN,
        "rewritten",
        {"order_id": "1", "amount": 60},
    )
