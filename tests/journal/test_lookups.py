"""Keyed look-ups for resume, pending approvals, and session history, on every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.journal import (
    ApprovalDecided,
    Journal,
    JournaledApproval,
    ModelCallFinished,
    RunFinished,
    SqliteJournal,
)
from regiment.models import Usage, text_response
from regiment.tools import Approve

from .records import approval, created, intent, new_id, reported, result
from .sql_trace import traced_reads

pytestmark = pytest.mark.anyio

TTL = 30.0


async def test_a_tool_call_reads_back_as_intent_and_result(journal: Journal) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.append(lease, intent(run_id, 0), durable=True)
    await journal.append(lease, result(run_id, 0))
    await journal.append(lease, intent(run_id, 1), durable=True)  # in flight when it "crashed"
    finished = await journal.tool_call(run_id, 1, "s1", 0)
    assert finished is not None
    assert finished.intent == intent(run_id, 0)
    assert finished.result == result(run_id, 0)
    in_flight = await journal.tool_call(run_id, 1, "s1", 1)
    assert in_flight is not None
    assert in_flight.result is None
    assert in_flight.intent.idempotency_key == "issue_refund:order_id=88213#1"
    assert await journal.tool_call(run_id, 1, "s1", 2) is None
    assert await journal.tool_call(run_id, 2, "s1", 0) is None
    assert await journal.tool_call(run_id, 1, "s2", 0) is None


async def test_step_ids_with_separators_do_not_collide(journal: Journal) -> None:
    run_id = new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.append(lease, intent(run_id, 0, step_id="a/1"))
    found = await journal.tool_call(run_id, 1, "a/1", 0)
    assert found is not None
    assert found.intent.step_id == "a/1"
    assert await journal.tool_call(run_id, 1, "a", 0) is None


async def test_a_model_response_is_found_by_its_call_key(journal: Journal) -> None:
    run_id, other = new_id(), new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    await journal.create_run(created(other), owner="w", ttl=TTL)
    reply = text_response('{"steps": []}', usage=Usage(input_tokens=40, output_tokens=7), model="m")
    await journal.append(lease, ModelCallFinished(run_id=run_id, call_key="plan/1", response=reply))
    assert await journal.model_response(run_id, "plan/1") == reply
    assert (await journal.model_response(run_id, "plan/1")).usage.input_tokens == 40  # type: ignore[union-attr]
    assert await journal.model_response(run_id, "plan/2") is None
    assert await journal.model_response(other, "plan/1") is None


async def test_a_pending_approval_pauses_the_run_until_decided(journal: Journal) -> None:
    waiting, running = new_id(), new_id()
    lease = await journal.create_run(created(waiting, minutes=1), owner="w", ttl=TTL)
    await journal.create_run(created(running, minutes=2), owner="w", ttl=TTL)
    await journal.append(lease, approval(waiting, "a1"))
    await journal.append(lease, approval(waiting, "a2"), durable=True)
    assert (await journal.get_run(waiting)).status == "paused"
    assert [i.run_id for i in await journal.list_runs(status="paused")] == [waiting]
    # The status's name before it was the word every other place uses, still understood:
    old_name = await journal.list_runs(status="awaiting_approval")  # type: ignore[arg-type]
    assert [i.run_id for i in old_name] == [waiting]
    assert [a.approval_id for a in await journal.pending_approvals()] == ["a1", "a2"]
    decided = ApprovalDecided(
        run_id=waiting, approval_id="a1", decision=Approve(), decided_by="ops"
    )
    await journal.append(lease, decided)
    assert await journal.pending_approvals(waiting) == (approval(waiting, "a2"),)
    assert (await journal.get_run(waiting)).status == "paused"
    decided = ApprovalDecided(run_id=waiting, approval_id="a2", decision=Approve())
    await journal.append(lease, decided)
    assert (await journal.get_run(waiting)).status == "running"
    assert await journal.pending_approvals() == ()


async def test_pending_approvals_of_every_run_come_oldest_run_first(journal: Journal) -> None:
    newer, older, done = new_id(), new_id(), new_id()
    leases = {
        run_id: await journal.create_run(created(run_id, minutes=m), owner="w", ttl=TTL)
        for run_id, m in ((newer, 3), (older, 1), (done, 2))
    }
    await journal.append(leases[newer], approval(newer, "n1"))
    await journal.append(leases[older], approval(older, "a1"))  # same id in two runs
    await journal.append(leases[newer], approval(newer, "a1"))
    await journal.append(leases[older], approval(older, "o2"))
    await journal.append(leases[done], approval(done, "d1"))
    decided = ApprovalDecided(run_id=older, approval_id="a1", decision=Approve())
    await journal.append(leases[older], decided)
    await journal.append(leases[done], RunFinished(run_id=done, status="cancelled"))
    pending = await journal.pending_approvals()
    assert [(r.run_id, r.approval_id) for r in pending] == [
        (older, "o2"),
        (newer, "n1"),
        (newer, "a1"),
    ]
    # Asked for by id, it has none either: an ended run's requests take no decision
    # (`regiment approvals RUN_ID` and `approve` say so), so none of them is pending.
    assert await journal.pending_approvals(done) == ()
    assert await journal.pending_approvals(new_id()) == ()  # a run it does not have


async def test_pending_approvals_of_every_run_are_one_query(tmp_path: Path) -> None:
    # They were one query for the runs awaiting approval and one more per run: with
    # 500 paused runs, GET /approvals took 0.4-0.5 s, and so did every decision posted
    # without its run id (the service looks the request up among the pending ones).
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    try:
        for index in range(30):
            run_id = new_id()
            lease = await journal.create_run(created(run_id, minutes=index), owner="w", ttl=TTL)
            await journal.append(lease, approval(run_id, f"a{index}"))
        await journal.flush()
        statements = await traced_reads(journal)
        pending = await journal.pending_approvals()
    finally:
        await journal.close()
    assert [r.approval_id for r in pending] == [f"a{index}" for index in range(30)]
    assert len(statements) == 1, statements


async def test_an_approval_is_found_by_its_id_with_its_decision(journal: Journal) -> None:
    run_id, other = new_id(), new_id()
    lease = await journal.create_run(created(run_id), owner="w", ttl=TTL)
    theirs = await journal.create_run(created(other), owner="w", ttl=TTL)
    await journal.append(lease, approval(run_id, "a1"))
    await journal.append(lease, approval(run_id, "a2"))
    await journal.append(theirs, approval(other, "a1"))
    decided = ApprovalDecided(run_id=run_id, approval_id="a1", decision=Approve(), decided_by="ops")
    await journal.append(lease, decided)
    found = await journal.approval(run_id, "a1")
    assert found == JournaledApproval(request=approval(run_id, "a1"), decision=decided)
    assert await journal.approval(run_id, "a2") == JournaledApproval(request=approval(run_id, "a2"))
    assert await journal.approval(other, "a1") == JournaledApproval(request=approval(other, "a1"))
    assert await journal.approval(run_id, "a3") is None
    assert await journal.approval(new_id(), "a1") is None


async def test_session_history_holds_goals_answers_and_committed_steps(journal: Journal) -> None:
    first, second, current, elsewhere = new_id(), new_id(), new_id(), new_id()
    one = await journal.create_run(
        created(first, minutes=1, session="t-4411", goal="g1"), owner="w", ttl=TTL
    )
    two = await journal.create_run(
        created(second, minutes=2, session="t-4411", goal="g2"), owner="w", ttl=TTL
    )
    await journal.create_run(
        created(current, minutes=3, session="t-4411", goal="g3"), owner="w", ttl=TTL
    )
    await journal.create_run(created(elsewhere, minutes=4, session="other"), owner="w", ttl=TTL)
    await journal.append_all(
        one,
        [
            reported(first, "s1", "looked up"),
            reported(first, "s2", "not kept", committed=False),
            reported(first, "s3", "refunded"),
            RunFinished(run_id=first, status="completed", answer="refunded 88213"),
        ],
    )
    await journal.append(two, reported(second, "s1", "drafted"))
    history = await journal.session_history("t-4411", exclude=current)
    assert [run.run_id for run in history] == [first, second]
    assert [run.goal for run in history] == ["g1", "g2"]
    assert history[0].answer == "refunded 88213"
    assert history[0].status == "completed"
    assert [(s.step_id, s.output) for s in history[0].steps] == [
        ("s1", "looked up"),
        ("s3", "refunded"),
    ]
    assert history[1].answer is None
    assert [s.output for s in history[1].steps] == ["drafted"]
    assert len(await journal.session_history("t-4411")) == 3
    assert await journal.session_history("nobody") == ()
