"""``regiment run`` pauses for approvals (exit 3); ``approvals`` lists, ``approve`` decides."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import anyio
import pytest

from regiment.journal import ApprovalDecided, ToolCallFinished, open_journal
from regiment.tools import Deny, EditArguments

from .helpers import run_cli

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."


async def _paused_run(journal: str) -> tuple[str, str]:
    code, out, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    assert code == 3, err
    assert out == ""  # no answer yet
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    # The command it names reads this journal: it said `regiment approvals RUN_ID` alone,
    # which reads the default journal instead ("no journal at .../.regiment/journal.db").
    flag = f"--journal {shlex.quote(journal)}"
    assert line.startswith(f"paused: 1 approval pending — regiment approvals {flag} run-")
    # the refund's call was waiting when the run paused: not run, not "cancelled"
    assert "     s2 issue_refund: not run, awaits a decision\n" in err
    assert "issue_refund: cancelled" not in err
    run_id = line.rsplit(" ", 1)[1]
    code, out, err = await run_cli("approvals", run_id, "--json", "--journal", journal)
    assert code == 0, err
    (row,) = [json.loads(x) for x in out.splitlines()]
    assert row["run_id"] == run_id
    assert row["worker"] == "refunds/billing"
    assert row["tool"] == "issue_refund"
    assert row["arguments"] == {"order_id": "77120"}
    assert row["step_id"] == "s2"
    return run_id, str(row["request_id"])


async def test_run_pauses_and_approvals_lists_the_request(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    code, out, err = await run_cli("approvals", environ={"REGIMENT_JOURNAL": journal})
    assert code == 0, err
    (line,) = out.splitlines()
    assert line.startswith(f"{request_id}  {run_id}  refunds/billing  s2  issue_refund(")
    code, _, err = await run_cli("approvals", "run-nope", "--journal", journal)
    assert code == 2
    assert "no run 'run-nope'" in err


async def test_the_commands_the_output_suggests_read_the_journal_in_use(tmp_path: Path) -> None:
    # Typed as printed, they find the run; with $REGIMENT_JOURNAL they need no --journal.
    journal = str(tmp_path / "my runs.db")  # a space: the command quotes it
    run_id, request_id = await _paused_run(journal)
    code, _, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", "--journal", journal)
    (line,) = [x for x in err.splitlines() if x.startswith("paused:")]
    code, out, err = await run_cli(*shlex.split(line.split(" — regiment ", 1)[1]))
    assert code == 0, err
    assert "issue_refund(" in out
    code, out, err = await run_cli("approve", run_id, request_id, "--journal", journal)
    assert code == 0, err
    hint = out.split("continue with: regiment ", 1)[1].strip()
    assert hint == f"resume --journal '{journal}' {run_id}"
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert f"it waits to be resumed (regiment {hint})" in out
    code, out, err = await run_cli(*shlex.split(hint), "--model", "scripted")
    assert code == 0, err
    assert "on the way" in out
    env = {"REGIMENT_JOURNAL": journal}
    code, _, err = await run_cli("run", TEAM, GOAL, "--model", "scripted", environ=env)
    assert code == 3, err
    assert err.splitlines()[-1].split(" — ")[1].startswith("regiment approvals run-")
    assert "--journal" not in err.splitlines()[-1]


async def test_a_paused_run_is_paused_in_runs_and_show(tmp_path: Path) -> None:
    # `runs` called it "awaiting_approval", the service and the README "paused".
    journal = str(tmp_path / "runs.db")
    run_id, _ = await _paused_run(journal)
    for status in ("paused", "awaiting_approval"):  # the old name still filters
        code, out, err = await run_cli("runs", "--status", status, "--json", "--journal", journal)
        assert code == 0, err
        assert [(r["run_id"], r["status"]) for r in map(json.loads, out.splitlines())] == [
            (run_id, "paused")
        ]
    code, out, err = await run_cli("runs", "--journal", journal)
    assert code == 0, err  # its column is as wide as the longest status, "completed"
    assert re.match(rf"{run_id}  paused     \d{{4}}-\d\d-\d\d \S+  refunds  For order", out), out
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert out.splitlines()[0] == f"run {run_id} (refunds): paused"


async def test_show_names_the_call_a_paused_step_waits_on(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert f"  v1 s2 [waits for a decision on] issue_refund ({request_id})\n" in out
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    (step,) = [s for s in json.loads(out)["steps"] if s["step_id"] == "s2"]
    assert (step["status"], step["output"]) == ("awaiting_approval", f"issue_refund ({request_id})")
    code, _, err = await run_cli("approve", run_id, request_id, "--journal", journal)
    assert code == 0, err
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    # It said "[dispatched, no report] " (a trailing space), as of a step lost in flight.
    assert "  v1 s2 [dispatched, waits for a resume]\n" in out  # decided: resume runs it
    assert [line for line in out.splitlines() if line != line.rstrip()] == []
    # It said only "stalled"; a service's GET /runs/{id} said "1 approval(s) pending".
    assert out.splitlines()[1] == (
        "paused, and its approval requests have all been decided since: it waits to be "
        f"resumed (regiment resume --journal {journal} {run_id})"
    )


async def test_approve_records_a_decision_once_and_checks_edits(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    bad = '{"order_id": 77120, "amount": 5}'
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--edit", bad, "--team", TEAM, "--journal", journal
    )
    assert code == 2
    assert "do not validate" in err
    assert "stays pending" in err
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--edit", "[1]", "--journal", journal
    )
    assert code == 2
    assert "--edit needs a JSON object" in err
    deep = '{"order_id": ' + "[" * 5000 + "]" * 5000 + "}"  # was a RecursionError traceback
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--edit", deep, "--journal", journal
    )
    assert code == 2
    assert "--edit is not JSON (maximum recursion depth exceeded" in err
    assert "Traceback" not in err
    good = '{"order_id": "77120"}'
    code, out, err = await run_cli(
        "approve",
        run_id,
        request_id,
        "--edit",
        good,
        "--by",
        "ana",
        "--team",
        TEAM,
        "--journal",
        journal,
    )
    assert code == 0, err
    assert f"continue with: regiment resume --journal {journal} {run_id}\n" in out
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--deny", "no", "--journal", journal
    )
    assert code == 2
    assert "already decided by ana" in err
    code, out, _ = await run_cli("approvals", "--journal", journal)
    assert out == ""
    opened = await open_journal(journal)
    try:
        records = [e.record for e in await opened.read(run_id)]
    finally:
        await opened.close()
    (decided,) = [r for r in records if isinstance(r, ApprovalDecided)]
    assert decided.decision == EditArguments(arguments={"order_id": "77120"})
    assert decided.decided_by == "ana"


async def test_deny_and_missing_journals_are_reported(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--deny", "too late", "--journal", journal
    )
    assert code == 0, err
    opened = await open_journal(journal)
    try:
        records = [e.record for e in await opened.read(run_id)]
    finally:
        await opened.close()
    (decided,) = [r for r in records if isinstance(r, ApprovalDecided)]
    assert decided.decision == Deny(reason="too late")
    code, _, err = await run_cli("approvals", "--journal", str(tmp_path / "none.db"))
    assert code == 2
    assert "no journal at" in err


async def test_run_approve_resume_issues_the_refund_once(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    code, out, err = await run_cli(
        "approve", run_id, request_id, "--by", "ana", "--journal", journal
    )
    assert code == 0, err
    assert f"continue with: regiment resume --journal {journal} {run_id}\n" in out
    code, out, err = await run_cli(
        "resume", TEAM, run_id, "--model", "scripted", "--journal", journal
    )
    assert code == 0, err
    assert "on the way" in out  # the e-mail after the refund
    opened = await open_journal(journal)
    try:
        info = await opened.get_run(run_id)
        records = [e.record for e in await opened.read(run_id)]
    finally:
        await opened.close()
    assert info.status == "completed"
    refunds = [
        r
        for r in records
        if isinstance(r, ToolCallFinished) and r.result.tool_name == "issue_refund"
    ]
    assert len(refunds) == 1
    assert not refunds[0].result.is_error
    assert refunds[0].result.arguments == {"order_id": "77120"}


async def test_the_paused_call_is_told_as_awaiting_approval_in_events(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    argv = ("run", TEAM, GOAL, "--model", "scripted", "--journal", journal, "--events", "jsonl")
    code, out, err = await run_cli(*argv)
    assert code == 3, err
    finished = [
        event
        for event in map(json.loads, out.splitlines())
        if event["type"] == "ToolCallFinished" and event["tool"] == "issue_refund"
    ]
    assert [event["outcome"] for event in finished] == ["awaiting_approval"]


async def test_a_second_decision_says_what_the_first_was_and_when(tmp_path: Path) -> None:
    # Without --by it said "was already decided by someone".
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    code, _, err = await run_cli("approve", run_id, request_id, "--journal", journal)
    assert code == 0, err
    code, _, err = await run_cli(
        "approve", run_id, request_id, "--deny", "no", "--journal", journal
    )
    assert code == 2
    assert "someone" not in err
    decided = rf"approval request {request_id} \(issue_refund in run {run_id}\) was already"
    when = r"decided \(approve\) at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; a decision cannot be"
    assert re.search(f"{decided} {when} changed", err), err


async def test_approve_of_a_run_live_in_another_process_says_when_and_where_to_decide(
    tmp_path: Path,
) -> None:
    """It said only that the run is owned by another process and 'can be resumed' once
    that has stopped: nothing about deciding."""
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    opened = await open_journal(journal)
    try:  # another machine's process resumes the run and holds its lease
        await opened.acquire(run_id, owner="elsewhere:4242", ttl=60)
    finally:
        await opened.close()
    code, _, err = await run_cli("approve", run_id, request_id, "--journal", journal)
    assert code == 2
    assert (
        f"run {run_id!r} is live in another process and takes no decision from here while "
        "it runs; it pauses once nothing else of it can go on: decide then"
    ) in err
    assert "'elsewhere:4242'" in err  # who holds it, as the journal says
    code, out, err = await run_cli("approvals", run_id, "--json", "--journal", journal)
    assert [json.loads(x)["request_id"] for x in out.splitlines()] == [request_id]


async def test_approvals_of_a_run_that_ended_without_deciding_lists_nothing(
    tmp_path: Path,
) -> None:
    """A forced resume of a team that no longer asks before a refund ran it and finished:
    `approvals RUN` still listed the request as pending (`approvals` without a run did
    not), though no decision could be taken on it any more."""
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    changed = anyio.Path(tmp_path / "team.toml")
    text = await anyio.Path(TEAM).read_text()
    await changed.write_text(text.replace('require_approval = ["issue_refund"]', ""))
    code, _, err = await run_cli(
        "resume",
        str(changed),
        run_id,
        "--force",
        "--model",
        "scripted",
        "--journal",
        journal,
        "--app-dir",
        str(REPO),
    )
    assert code == 0, err
    code, out, err = await run_cli("approvals", run_id, "--journal", journal)
    assert (code, out) == (0, ""), err
    code, _, err = await run_cli("approve", run_id, request_id, "--journal", journal)
    assert code == 2
    assert "has ended (completed): a decision would change nothing" in err
