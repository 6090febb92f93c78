"""``POST /runs/{id}/resume`` under a real uvicorn: a run paused for approval is decided
over HTTP, then resumed by the service, in the run's trace (linked to its first root)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2 as httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from examples.service.serving import serving
from regiment import Team
from regiment.journal import Entry, SqliteJournal
from regiment.serve import create_app
from regiment.telemetry import SpanCollector, Telemetry
from tests.cli.helpers import run_cli
from tests.hierarchy.approval_team import Shop, plan_json, shop_team, step
from tests.serve.sse import frames
from tests.serve.teams import Stuck, stuck_team

pytestmark = pytest.mark.anyio

SCAN = "Please scan the warehouse for order 55001."


async def test_a_paused_run_is_decided_and_resumed_over_http_in_one_trace(tmp_path: Path) -> None:
    shop, collector = Shop(), SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    team = shop_team(shop, plan_json(step("s1", "billing", "refund 3 10")))
    team = dataclasses.replace(team, telemetry=Telemetry(provider))
    app = create_app(team, journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
        assert paused["status"] == "paused"
        run_id = paused["run_id"]
        (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        decided = await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
        assert decided.status_code == 200

        resumed = await c.post(f"/runs/{run_id}/resume?wait=true")
        assert resumed.status_code == 200, resumed.text
        view = resumed.json()
        assert (view["run_id"], view["status"]) == (run_id, "completed")
        assert shop.refunds == [("3", 10)]

        again = await c.post(f"/runs/{run_id}/resume")
        assert again.status_code == 409
        assert "already finished" in again.json()["detail"]
        unknown = await c.post("/runs/run-0-00000000/resume")
        assert unknown.status_code == 404
    provider.shutdown()

    first, second = sorted(
        (s for s in collector.spans() if s.name == "invoke_agent shop"),
        key=lambda s: s.start_time or 0,
    )
    assert first.context is not None
    assert second.context is not None
    assert second.context.trace_id == first.context.trace_id
    assert second.parent is not None
    assert second.parent.span_id == first.context.span_id
    (link,) = second.links
    assert link.context.span_id == first.context.span_id
    assert second.attributes is not None
    assert second.attributes["regiment.run.resume"] == 1


async def test_resume_without_a_journal_is_a_conflict() -> None:
    app = create_app(shop_team(Shop(), plan_json(step("s1", "billing", "refund 3 10"))))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        answer = await c.post("/runs/run-1-00000000/resume")
    assert answer.status_code == 409
    # It said "resume needs the journal ...: Team.start(journal=...)", code a service's
    # user does not write.
    assert answer.json()["detail"] == (
        "this service keeps no journal, so it cannot resume a run: serve with "
        "--journal PATH_OR_URL (or create_app(team, journal=...))"
    )


def _refund_team() -> Team:
    return shop_team(Shop(), plan_json(step("s1", "billing", "refund 3 10")))


@asynccontextmanager
async def _client(team: Team, journal: str | SqliteJournal) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the team served over ``journal`` (a new app each time: a restart)."""
    async with (
        serving(create_app(team, journal=journal)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        yield c


async def _events(c: httpx.AsyncClient, run_id: str, after: int = 0) -> list[tuple[int, str]]:
    headers = {"last-event-id": str(after)} if after else {}
    async with c.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        return [(f.id, f.event) async for f in frames(response) if f.id is not None and f.event]


async def test_a_resumed_runs_events_keep_their_numbers_live_and_after_a_restart(
    tmp_path: Path,
) -> None:
    # Paused (its stream ends with RunCompleted, status paused), denied, resumed: the
    # live stream goes on under the journal's numbers, so Last-Event-ID at the pause
    # gets exactly what came after it, and a restarted app replays the same numbers.
    journal = str(tmp_path / "runs.db")
    team = _refund_team()
    async with _client(team, journal) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
        run_id = paused["run_id"]
        before = await _events(c, run_id)
        assert before[-1][1] == "RunCompleted"
        (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        await c.post(
            f"/approvals/{request['request_id']}",
            json={"decision": "deny", "reason": "over the limit"},
        )
        assert (await c.post(f"/runs/{run_id}/resume?wait=true")).status_code == 200
        live = await _events(c, run_id)
        after_pause = await _events(c, run_id, after=len(before))
    assert live[: len(before)] == before
    assert after_pause == live[len(before) :]
    assert after_pause[0][1] == "ApprovalResolved"
    assert live[-1][1] == "RunCompleted"
    assert [n for n, _ in live] == list(range(1, len(live) + 1))

    async with _client(team, journal) as c:
        assert await _events(c, run_id) == live


async def test_a_paused_run_is_listed_paused_with_its_result_after_a_restart(
    tmp_path: Path,
) -> None:
    journal = str(tmp_path / "runs.db")
    team = _refund_team()
    async with _client(team, journal) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
    async with _client(team, journal) as c:
        shown = (await c.get(f"/runs/{paused['run_id']}")).json()
        listed = (await c.get("/runs", params={"status": "paused"})).json()
        # `regiment runs` called it that: the old name asks for the same runs
        old_name = (await c.get("/runs", params={"status": "awaiting_approval"})).json()
    assert (shown["status"], shown["answer"], shown["plans"]) == (
        "paused",
        paused["answer"],
        paused["plans"],
    )
    assert [r["run_id"] for r in listed["runs"]] == [paused["run_id"]]
    assert old_name == listed


async def test_a_run_resumed_before_its_approval_is_decided_pauses_again(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    team = _refund_team()
    async with _client(team, journal) as c:
        run_id = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()["run_id"]
        before = await _events(c, run_id)
        again = (await c.post(f"/runs/{run_id}/resume?wait=true")).json()
        live = await _events(c, run_id)
    assert again["status"] == "paused"
    assert live == [*before, (len(before) + 1, "RunCompleted")]  # it says it paused again
    async with _client(team, journal) as c:
        assert await _events(c, run_id) == live


class _CountingReads(SqliteJournal):  # type: ignore[misc]  # (final: a test-only double)
    """A real SQLite journal that counts the whole-run reads it answers."""

    reads = 0

    async def read(self, run_id: str, *, after: int = 0) -> tuple[Entry, ...]:
        if not after:  # (the resume's read of what came after the service's is no whole-run read)
            _CountingReads.reads += 1
        return await super().read(run_id, after=after)


async def test_a_resume_over_http_reads_the_runs_journal_once(tmp_path: Path) -> None:
    # The service reads the run's events (to keep their numbers) and the resume took
    # them over from it: the resume itself read the whole run again. The approval desk,
    # asking whether the run's request was decided meanwhile, read it once more; it
    # looks the approval up by key now.
    journal = await _CountingReads.open(tmp_path / "runs.db")
    try:
        async with _client(_refund_team(), journal) as c:
            run_id = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()["run_id"]
            (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
            await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
            _CountingReads.reads = 0
            resumed = (await c.post(f"/runs/{run_id}/resume?wait=true")).json()
        assert resumed["status"] == "completed"
        assert _CountingReads.reads == 1  # the service's read, and no other
    finally:
        await journal.close()


async def test_a_second_resume_of_a_run_this_service_runs_says_so(tmp_path: Path) -> None:
    # It was told the run is "owned by 'host:pid' ... if that process still runs, wait for
    # it": the lease of this very service.
    shop = Shop()
    held = {**step("s2", "slow", "slow close"), "depends_on": ["s1"]}
    team = shop_team(shop, plan_json(step("s1", "billing", "refund 3 10"), held))
    async with _client(team, str(tmp_path / "runs.db")) as c:
        run_id = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()["run_id"]
        (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
        resumed = await c.post(f"/runs/{run_id}/resume")
        assert resumed.status_code == 202  # live: held at s2
        assert resumed.headers["location"] == f"/runs/{run_id}"  # (it had none)
        again = await c.post(f"/runs/{run_id}/resume")
        shop.release.set()
        assert (await _events(c, run_id))[-1][1] == "RunCompleted"
    assert again.status_code == 409
    assert again.json()["detail"] == _running_here(run_id)
    assert shop.refunds == [("3", 10)]


async def test_a_resume_of_a_run_this_service_started_says_so(tmp_path: Path) -> None:
    # It said the run had been "resumed by an earlier request": it was started by one.
    stuck = Stuck()
    async with _client(stuck_team(stuck), str(tmp_path / "runs.db")) as c:
        run_id = (await c.post("/runs", json={"goal": SCAN})).json()["run_id"]
        await stuck.started.wait()
        again = await c.post(f"/runs/{run_id}/resume")
    assert again.status_code == 409
    assert again.json()["detail"] == _running_here(run_id)


def _running_here(run_id: str) -> str:
    """What a resume of ``run_id`` says while this service runs it."""
    return (
        f"run {run_id!r} is running in this service already: follow it with "
        f"GET /runs/{run_id}/events"
    )


async def test_a_resumed_run_keeps_its_session(tmp_path: Path) -> None:
    # The resumed run's view said "session": null until the service restarted.
    team = shop_team(Shop(), plan_json(step("s1", "billing", "refund 3 10")))
    app = create_app(team, journal=str(tmp_path / "runs.db"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        paused = await c.post("/runs?wait=true", json={"goal": "refund", "session": "desk-7"})
        run_id = paused.json()["run_id"]
        (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        await c.post(f"/approvals/{request['request_id']}", json={"decision": "approve"})
        resumed = (await c.post(f"/runs/{run_id}/resume?wait=true")).json()
        shown = (await c.get(f"/runs/{run_id}")).json()
        (listed,) = (await c.get("/runs")).json()["runs"]
    assert resumed["status"] == "completed"
    assert [resumed["session"], shown["session"], listed["session"]] == ["desk-7"] * 3


async def test_approve_and_show_on_the_command_line_point_at_the_service_s_resume(
    tmp_path: Path,
) -> None:
    # It said "continue with: regiment resume TEAM_FILE run-...", a file a service's
    # user may not have, and not the route that resumes the run.
    shop, journal = Shop(), str(tmp_path / "runs.db")
    app = create_app(
        shop_team(shop, plan_json(step("s1", "billing", "refund 3 10"))), journal=journal
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        paused = (await c.post("/runs?wait=true", json={"goal": "refund"})).json()
        run_id = paused["run_id"]
        (request,) = (await c.get("/approvals", params={"run_id": run_id})).json()["approvals"]
        code, out, err = await run_cli(
            "approve", run_id, request["request_id"], "--journal", journal
        )
        assert code == 0, err
        assert out == (
            f"approve: issue_refund in run {run_id} ({request['request_id']}); continue with: POST "
            f"/runs/{run_id}/resume to the service that started it, or regiment resume "
            f"--journal {journal} TEAM_FILE {run_id}\n"
        )
        code, out, err = await run_cli("show", run_id, "--journal", journal)
        assert code == 0, err  # it said "(regiment resume RUN_ID)", which needs a team file
        assert out.splitlines()[1] == (
            "paused, and its approval requests have all been decided since: it waits to be "
            f"resumed (POST /runs/{run_id}/resume to the service that started it, or regiment "
            f"resume --journal {journal} TEAM_FILE {run_id})"
        )
        resumed = await c.post(f"/runs/{run_id}/resume?wait=true")  # what it says works
        assert resumed.json()["status"] == "completed", resumed.text
    assert shop.refunds == [("3", 10)]
