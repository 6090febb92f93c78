"""``GET /approvals`` and ``POST /approvals/{request_id}`` under a real uvicorn."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from examples.service.serving import serving
from regiment.journal import ApprovalDecided, open_journal
from regiment.serve import create_app
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step

from .sse import run_events

pytestmark = pytest.mark.anyio


async def test_a_live_run_waits_for_a_decision_over_http() -> None:
    shop = Shop()
    plan = plan_json(
        step("s1", "billing", "refund 1 40"),
        step("s2", "billing", "refund 2 500"),
        step("s3", "slow", "slow work"),
    )
    app = create_app(shop_team(shop, plan), token="t0k")
    headers = {"Authorization": "Bearer t0k"}
    async with serving(app) as url, httpx.AsyncClient(base_url=url, headers=headers) as c:
        run_id = (await c.post("/runs", json={"goal": "two refunds"})).json()["run_id"]
        asked: list[dict[str, object]] = []
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for line in events.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line.removeprefix("data: "))
                if event["type"] == "ApprovalRequested":
                    asked.append(event["request"])
                    if len(asked) == 2:
                        await _decide_both(c, run_id, asked)
                elif event["type"] == "ApprovalResolved" and len(asked) == 2:
                    shop.release.set()
        view = (await c.get(f"/runs/{run_id}")).json()
        assert view["status"] == "completed"
        assert sorted(shop.refunds) == [("1", 40), ("2", 100)]
        assert (await c.get("/approvals")).json() == {"approvals": []}


async def _decide_both(c: httpx.AsyncClient, run_id: str, asked: list[dict[str, object]]) -> None:
    listed = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
    assert {a["request_id"] for a in listed} == {a["request_id"] for a in asked}
    small = next(a for a in listed if a["arguments"] == {"order_id": "1", "amount": 40})
    big = next(a for a in listed if a["arguments"] == {"order_id": "2", "amount": 500})
    assert (small["worker"], small["tool"], small["run_id"]) == (
        "shop/billing",
        "issue_refund",
        run_id,
    )
    bad = await c.post(
        f"/approvals/{big['request_id']}",
        json={"decision": "edit", "arguments": {"order_id": "2", "amount": "lots"}},
    )
    assert bad.status_code == 422
    assert "stays pending" in bad.json()["detail"]
    no_reason = await c.post(f"/approvals/{big['request_id']}", json={"decision": "deny"})
    assert no_reason.status_code == 422
    # it said only "a denial needs a reason": not what to send, nor that nothing was decided
    assert no_reason.json()["detail"].endswith(
        'the request stays pending: send {"decision": "deny", "reason": "..."}'
    )
    no_arguments = await c.post(f"/approvals/{big['request_id']}", json={"decision": "edit"})
    assert no_arguments.status_code == 422
    assert no_arguments.json()["detail"].endswith(
        'the request stays pending: send {"decision": "edit", "arguments": {...}}'
    )
    edited = await c.post(
        f"/approvals/{big['request_id']}",
        json={"decision": "edit", "arguments": {"order_id": "2", "amount": 100}, "by": "ana"},
    )
    assert edited.status_code == 200
    answer = edited.json()
    assert answer["decision"] == "edit"
    # what the tool is to run with (it said the model's 500), and what the model asked
    assert answer["arguments"] == {"order_id": "2", "amount": 100}
    assert answer["requested_arguments"] == {"order_id": "2", "amount": 500}
    assert answer["decided_by"] == "ana"
    ok = await c.post(f"/approvals/{small['request_id']}", json={"decision": "approve"})
    assert ok.status_code == 200
    again = await c.post(f"/approvals/{small['request_id']}", json={"decision": "approve"})
    assert again.status_code == 409
    assert again.json()["detail"] == (  # it said "by someone" when no "by" was given
        f"approval request {small['request_id']} (issue_refund in run {run_id}) was already "
        "decided: approved; a decision cannot be changed"
    )


async def test_a_paused_run_without_a_journal_cannot_be_decided() -> None:
    shop = Shop()
    app = create_app(shop_team(shop, plan_json(step("s1", "billing", "refund 3 10"))))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        done = (await c.post("/runs?wait=true", json={"goal": "one refund"})).json()
        assert done["status"] == "paused"
        (pending,) = (await c.get("/approvals")).json()["approvals"]
        assert pending["run_id"] == done["run_id"]
        refused = await c.post(f"/approvals/{pending['request_id']}", json={"decision": "approve"})
        assert refused.status_code == 409
        # It said "start the team with journal=...", code a service's user does not write.
        assert refused.json()["detail"] == (
            f"the run of request {pending['request_id']!r} has paused, and this service keeps "
            "no journal to hold the decision for a resume (nor can it resume a run): serve "
            "with --journal PATH_OR_URL (or create_app(team, journal=...)) so paused runs can "
            "be decided and resumed"
        )
        assert (await c.post("/approvals/x", json={"decision": "maybe"})).status_code == 422
    assert shop.refunds == []


async def test_a_request_whose_run_was_cancelled_by_a_restart_is_409_not_503(
    tmp_path: Path,
) -> None:
    # A run waiting live for a decision (its slow step still works) is cancelled by the
    # shutdown; after the restart its request is no longer pending, and deciding it
    # is a conflict that says why (it was '503 journal unavailable ... try again').
    journal = str(tmp_path / "runs.db")
    plan = plan_json(step("s1", "billing", "refund 2 500"), step("s2", "slow", "slow work"))
    async with (
        serving(create_app(shop_team(Shop(), plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs", json={"goal": "a big refund"})).json()["run_id"]
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for line in events.aiter_lines():
                if line == "event: ApprovalRequested":
                    break
        (asked,) = (await c.get("/approvals")).json()["approvals"]
    async with (
        serving(create_app(shop_team(Shop(), plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        assert (await c.get(f"/runs/{run_id}")).json()["status"] == "cancelled"
        assert (await c.get("/approvals")).json() == {"approvals": []}
        # Asked for by its run, too (it listed the request, which no decision can take)
        by_run = (await c.get("/approvals", params={"run_id": run_id})).json()
        assert by_run == {"approvals": []}
        late = await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
    assert late.status_code == 409, late.text
    assert f"run {run_id} has ended (cancelled)" in late.json()["detail"]


async def test_deciding_a_paused_run_at_once_twice_or_while_another_process_owns_it_is_409(
    tmp_path: Path,
) -> None:
    # Two decisions posted at once both found the request pending: both were journaled
    # (200 and 200), or the second was '503 journal unavailable' with a lease "alive for
    # another 30 s" that its holder, the first decision, let go a moment later. A run
    # owned by another process (resumed there) was '503 journal unavailable' too.
    journal = str(tmp_path / "runs.db")
    plan = plan_json(step("s1", "billing", "refund 2 500"), step("s2", "billing", "refund 3 600"))
    async with (
        serving(create_app(shop_team(Shop(), plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        run_id = (await c.post("/runs?wait=true", json={"goal": "two refunds"})).json()["run_id"]
        first, second = (await c.get("/approvals")).json()["approvals"]
        path = f"/approvals/{first['request_id']}"
        answers: list[httpx.Response] = []
        async with anyio.create_task_group() as tg:
            for decision in ("approve", "deny"):
                body = {"decision": decision, "reason": "r", "by": decision}
                tg.start_soon(_post_into, c, path, body, answers)
        other = await open_journal(journal)
        try:
            await other.acquire(run_id, owner="elsewhere:1", ttl=60)
            held = await c.post(f"/approvals/{second['request_id']}", json={"decision": "approve"})
            records = [e.record for e in await other.read(run_id)]
        finally:
            await other.close()
    assert sorted(a.status_code for a in answers) == [200, 409]
    refused = next(a for a in answers if a.status_code == 409).json()
    assert refused["detail"].startswith(f"approval request {first['request_id']} (issue_refund")
    assert "was already decided by" in refused["detail"]
    assert len([r for r in records if isinstance(r, ApprovalDecided)]) == 1
    assert held.status_code == 409, held.text
    assert held.json()["detail"].startswith(f"run {run_id!r} is owned by 'elsewhere:1'")
    assert held.json()["detail"].endswith(
        "(a run live in another process takes its decisions there)"
    )


async def _post_into(
    c: httpx.AsyncClient, path: str, body: dict[str, str], answers: list[httpx.Response]
) -> None:
    answers.append(await c.post(path, json=body))


async def test_a_paused_run_whose_requests_are_decided_says_it_waits_for_a_resume(
    tmp_path: Path,
) -> None:
    # Its answer still read "paused: 1 approval(s) pending" (listed as stalled after a
    # restart, as paused before it), the decision taken.
    journal = str(tmp_path / "runs.db")
    plan = plan_json(step("s1", "billing", "refund 2 500"))
    waits = "paused, and its approval requests have all been decided since: it waits to be "
    for restart in (False, True):
        app = create_app(shop_team(Shop(), plan), journal=journal)
        async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
            if not restart:
                done = (await c.post("/runs?wait=true", json={"goal": "a refund"})).json()
                run_id = done["run_id"]
                assert done["answer"] == "paused: 1 approval pending"
                (asked,) = (await c.get("/approvals")).json()["approvals"]
                decided = await c.post(
                    f"/approvals/{asked['request_id']}", json={"decision": "approve"}
                )
                assert decided.status_code == 200, decided.text
            view = (await c.get(f"/runs/{run_id}")).json()
            listed = (await c.get("/runs", params={"status": "stalled"})).json()["runs"]
        assert view["status"] == "stalled"
        assert [r["run_id"] for r in listed] == [run_id]
        # it said "`regiment resume RUN_ID`", which needs the team file on record that a
        # run a service started has not
        assert view["answer"] == (
            f"{waits}resumed (POST /runs/{run_id}/resume, or `regiment resume TEAM_FILE {run_id}`)"
        )


@pytest.mark.parametrize("journaled", [False, True])
async def test_a_decision_on_a_run_winding_down_from_its_cancel_is_409(
    tmp_path: Path, journaled: bool
) -> None:
    # The run was cancelled and waits for a step that does not stop: a decision posted
    # meanwhile answered 200 (journaled or not), and nothing ever applied it.
    shop = Shop()
    plan = plan_json(step("s1", "billing", "refund 2 500"), step("s2", "slow", "stubborn work"))
    journal = str(tmp_path / "runs.db") if journaled else None
    app = create_app(shop_team(shop, plan), journal=journal)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        run_id = (await c.post("/runs", json={"goal": "a big refund"})).json()["run_id"]
        async with c.stream("GET", f"/runs/{run_id}/events") as events:
            async for line in events.aiter_lines():
                if line == "event: ApprovalRequested":
                    break
        (asked,) = (await c.get("/approvals")).json()["approvals"]
        assert (await c.post(f"/runs/{run_id}/cancel")).json()["cancelling"] is True
        await anyio.wait_all_tasks_blocked()  # the run winds down: its stubborn step holds it
        late = await c.post(f"/approvals/{asked['request_id']}", json={"decision": "approve"})
        shop.release.set()
        last = (await run_events(c, run_id))[-1]
        view = (await c.get(f"/runs/{run_id}")).json()
        pending = (await c.get("/approvals")).json()
    assert late.status_code == 409, late.text
    assert f"its run {run_id} has ended (cancelled)" in late.json()["detail"]
    assert last.data is not None
    assert last.data["error_type"] == "RunCancelled"
    assert (view["status"], pending) == ("cancelled", {"approvals": []})
    assert shop.refunds == []


@pytest.mark.parametrize("journaled", [False, True])
async def test_a_paused_run_names_the_requests_it_waits_for(
    tmp_path: Path, journaled: bool
) -> None:
    # A paused run's view said "paused: 2 approval(s) pending" and named none of them
    # (RunResult.pending_approvals): a client needed GET /approvals?run_id=... as well.
    journal = str(tmp_path / "runs.db") if journaled else None
    plan = plan_json(step("s1", "billing", "refund 2 500"), step("s2", "billing", "refund 3 600"))
    async with (
        serving(create_app(shop_team(Shop(), plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        done = (await c.post("/runs?wait=true", json={"goal": "two refunds"})).json()
        run_id = done["run_id"]
        listed = (await c.get("/approvals")).json()["approvals"]
        assert done["status"] == "paused"
        assert done["pending_approvals"] == listed
        assert [a["arguments"] for a in listed] == [
            {"order_id": "2", "amount": 500},
            {"order_id": "3", "amount": 600},
        ]
        assert (await c.get(f"/runs/{run_id}")).json()["pending_approvals"] == listed
        if not journaled:
            return
        first, second = (a["request_id"] for a in listed)
        decided = await c.post(f"/approvals/{first}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        # the one left is what the run waits for now
        assert (await c.get(f"/runs/{run_id}")).json()["pending_approvals"] == listed[1:]
    async with (
        serving(create_app(shop_team(Shop(), plan), journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        assert (await c.get(f"/runs/{run_id}")).json()["pending_approvals"] == listed[1:]
        denied = await c.post(f"/approvals/{second}", json={"decision": "deny", "reason": "no"})
        assert denied.status_code == 200, denied.text
        assert (await c.get(f"/runs/{run_id}")).json()["pending_approvals"] == []
        done = (await c.post(f"/runs/{run_id}/resume?wait=true")).json()
        assert done["status"] == "completed"
        assert done["pending_approvals"] == []
