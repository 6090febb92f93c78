"""``show`` of a run that ended while a call waited for a decision.

``regiment run`` stopped with Ctrl-C while one step's call waited for a decision and
another step's tool ran can leave the journal with no report of either step (the
team stopped under the run; seen with a real SIGINT): ``show`` then said the step
``[waits for a decision on]`` its call, which ``approve`` refuses as the run has ended,
and that the tool call was ``started, no result yet (in flight ...)``, as of a run a
resume goes on with. The journal here holds what that run left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.journal import (
    ApprovalRequested,
    PlanVersion,
    Record,
    RunFinished,
    StepDispatched,
    open_journal,
)
from regiment.tools import ApprovalRequest
from tests.journal.records import created, intent, new_id

from .helpers import run_cli

pytestmark = pytest.mark.anyio


async def _journaled(journal: str, run_id: str, *, ended: bool) -> None:
    records: list[Record] = [
        PlanVersion(
            run_id=run_id, version=1, plan={"version": 1, "steps": [{"id": "s1"}, {"id": "s2"}]}
        ),
        StepDispatched(run_id=run_id, plan_version=1, step_id="s1", worker="billing"),
        StepDispatched(run_id=run_id, plan_version=1, step_id="s2", worker="billing"),
        ApprovalRequested(  # s1's call waits for a decision
            run_id=run_id,
            approval_id="apr-1",
            plan_version=1,
            step_id="s1",
            call_index=0,
            request=ApprovalRequest(
                tool_name="issue_refund",
                call_id="call-0",
                arguments={"order_id": "88213"},
                request_id="apr-1",
                run_id=run_id,
                worker="support/billing",
                plan_version=1,
                step_id="s1",
            ),
        ),
        intent(run_id, step_id="s2"),  # s2's call runs
    ]
    if ended:
        error = "RunCancelled: the run's planner stopped before the run finished"
        records.append(RunFinished(run_id=run_id, status="cancelled", error=error))
    opened = await open_journal(journal)
    try:
        lease = await opened.create_run(created(run_id), owner="gone:1", ttl=0.001)
        await opened.append_all(lease, records)
        await opened.release(lease)
    finally:
        await opened.close()


async def test_show_of_a_run_that_ended_while_a_call_waited(tmp_path: Path) -> None:
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    await _journaled(journal, run_id, ended=True)
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert f"run {run_id} (support): cancelled\n" in out
    assert "  v1 s1 [undecided when the run ended] issue_refund (apr-1)\n" in out
    assert "waits for a decision" not in out
    assert "  v1 s2 [dispatched, no report]\n" in out
    assert (  # the run is over: the call was cut, not in flight for a resume
        '    call issue_refund({"amount": 10.5, "order_id": "88213"}) [cut short: started, '
        "never finished; what it did before the cut is not recorded]\n"
    ) in out
    code, _, err = await run_cli("approve", run_id, "apr-1", "--journal", journal)
    assert code == 2
    assert "has ended (cancelled): a decision would change nothing" in err


async def test_show_of_a_stopped_run_still_says_what_waits(tmp_path: Path) -> None:
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    await _journaled(journal, run_id, ended=False)  # its process died: a resume goes on
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert "  v1 s1 [waits for a decision on] issue_refund (apr-1)\n" in out
    assert "[started, no result yet (in flight when the run stopped, or still running)]" in out
