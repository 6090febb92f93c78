"""Three real processes: ``regiment run`` pauses and exits (code 3), ``regiment approve``
decides, ``regiment resume`` finishes; the refund's body ran exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regiment.journal import ApprovalDecided, ToolCallFinished, ToolCallStarted, open_journal
from tests.cli.helpers import regiment_process

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


@pytest.fixture(params=("sqlite", "postgres"))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# The CLI commands run in processes of their own, on the CLI's loop: this test's backend
# only reads the journal once at the end (tests/journal reads it on both backends); on
# trio it ran the same processes again.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_pause_exit_approve_in_a_second_process_resume_in_a_third(
    location: str, tmp_path: Path
) -> None:
    options = ("--model", "scripted", "--journal", location, "--app-dir", str(REPO))
    first = regiment_process("run", TEAM, GOAL, *options, cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    assert first.stdout == ""
    (line,) = [x for x in first.stderr.splitlines() if x.startswith("paused:")]
    run_id = line.rsplit(" ", 1)[1]

    listed = regiment_process("approvals", run_id, "--json", "--journal", location, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (row,) = [json.loads(x) for x in listed.stdout.splitlines()]
    second = regiment_process(
        "approve", run_id, row["request_id"], "--by", "ana", "--journal", location, cwd=tmp_path
    )
    assert second.returncode == 0, second.stderr

    third = regiment_process("resume", TEAM, run_id, *options, cwd=tmp_path)
    assert third.returncode == 0, third.stderr
    assert "on the way" in third.stdout  # the customer's e-mail says the refund is coming

    journal = await open_journal(location)
    try:
        assert (await journal.get_run(run_id)).status == "completed"
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    intents = [r for r in records if isinstance(r, ToolCallStarted) and r.tool == "issue_refund"]
    results = [
        r
        for r in records
        if isinstance(r, ToolCallFinished) and r.result.tool_name == "issue_refund"
    ]
    # The first process's intent, and the third's for the same call run again: `regiment run`
    # traces, and a traced resume journals a re-run call's intent anew with its new span's id.
    assert len(intents) == 2
    assert {(i.idempotency_key, i.call_index, i.step_id) for i in intents} == {
        ("issue_refund:order_id=77120", 0, intents[0].step_id)
    }
    assert intents[1].span is not None
    assert intents[1].span != intents[0].span
    assert len(results) == 1  # the body ran once: in the third process, after the decision
    assert results[0].result.arguments == {"order_id": "77120"}
    assert not results[0].result.is_error
    (decided,) = [r for r in records if isinstance(r, ApprovalDecided)]
    assert (decided.approval_id, decided.decided_by) == (row["request_id"], "ana")
