"""``show`` of a run that ended with steps whose reports its journal never got.

A Ctrl-C can stop the team under the run before its steps report (seen with a real
SIGINT, see test_show_ended_wait): the journal then holds the steps' dispatch and their
calls' intents, and the closing event, whose step reports say how they ended. ``show``
said such a step was ``[dispatched, no report]`` in a run that was over, and gave its
call no end; the events file and the service's stream had the ends, made from the
closing event by ``OpenEnds``. The journal here holds what such a run left.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from regiment._json import JsonValue
from regiment.hierarchy import RunCompleted, RunFailed, RunResult, StepReport, ToolOutcome
from regiment.journal import (
    EventRecorded,
    PlanVersion,
    Record,
    RunFinished,
    StepDispatched,
    open_journal,
)
from tests.journal.records import created, intent, new_id

from .helpers import run_cli

pytestmark = pytest.mark.anyio

_WHY = "cancelled by the planner: the run is ending"


def _closing(run_id: str) -> EventRecorded:
    """The run's closing event: s1's report (its call timed out, another cut), none of s2."""
    outcomes = tuple(
        ToolOutcome(
            tool="issue_refund",
            call_id=f"call-{index}",
            arguments={},
            content="",
            is_error=True,
            error_type=kind,
        )
        for index, kind in enumerate(("cut", "timeout"))
    )
    report = StepReport(
        run_id=run_id,
        plan_version=1,
        step_id="s1",
        attempt=1,
        worker="billing",
        status="cancelled",
        error=_WHY,
        tool_outcomes=outcomes,
    )
    failed = RunFailed(run_id=run_id, error_type="RunCancelled", message="stop", steps=(report,))
    return EventRecorded(run_id=run_id, kind="RunFailed", event=msgspec.to_builtins(failed))


def _paused(run_id: str) -> EventRecorded:
    """A pause's ``RunCompleted``: s1's report there is the one it had when it paused."""
    report = StepReport(
        run_id=run_id, plan_version=1, step_id="s1", attempt=1, worker="billing", status="done"
    )
    result = RunResult(
        run_id=run_id, goal="g", answer="", status="paused", plans=(), steps=(report,), committed=()
    )
    paused = RunCompleted(run_id=run_id, result=result)
    return EventRecorded(run_id=run_id, kind="RunCompleted", event=msgspec.to_builtins(paused))


async def _journaled(
    journal: str, run_id: str, *, closed: bool, paused_then_ended: bool = False
) -> None:
    records: list[Record] = [
        PlanVersion(
            run_id=run_id, version=1, plan={"version": 1, "steps": [{"id": "s1"}, {"id": "s2"}]}
        ),
        StepDispatched(run_id=run_id, plan_version=1, step_id="s1", worker="billing"),
        StepDispatched(run_id=run_id, plan_version=1, step_id="s2", worker="billing"),
        intent(run_id, 0, step_id="s1"),
        intent(run_id, 1, step_id="s1"),
        intent(run_id, 0, step_id="s2"),  # the same call id as s1's first: its own end
    ]
    if paused_then_ended:  # (its run then stopped under it: no closing event after)
        error = "RunCancelled: the run's planner stopped before the run finished"
        records += [_paused(run_id), RunFinished(run_id=run_id, status="cancelled", error=error)]
    if closed:
        error = "RunCancelled: the run's planner stopped before the run finished"
        records += [_closing(run_id), RunFinished(run_id=run_id, status="cancelled", error=error)]
    opened = await open_journal(journal)
    try:
        lease = await opened.create_run(created(run_id), owner="gone:1", ttl=0.001)
        await opened.append_all(lease, records)
        await opened.release(lease)
    finally:
        await opened.close()


async def test_show_ends_steps_without_reports_from_the_closing_event(tmp_path: Path) -> None:
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    await _journaled(journal, run_id, closed=True)
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    call = '    call issue_refund({"amount": 10.5, "order_id": "88213"}) '
    cut = (
        "[cut short: started, never finished; what it did before the cut is not recorded; "
        "ended 'cut', from the run's closing report]"
    )
    assert out.splitlines()[3:9] == [
        f"  v1 s1 [cancelled, from the run's closing report] {_WHY}",
        f"{call}{cut}",
        f"{call}[started, its result not journaled; ended 'timeout', from the run's closing report]",
        "  v1 s2 [cancelled, from the run's closing report] cancelled with the run; its report "
        "did not come before the run ended",
        f"{call}{cut}",
        "error: RunCancelled: the run's planner stopped before the run finished",
    ]
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    assert code == 0, err
    steps = json.loads(out)["steps"]
    assert [(s["step_id"], s["status"], s["ended_by"]) for s in steps] == [
        ("s1", "cancelled", "closing_report"),
        ("s2", "cancelled", "closing_report"),
    ]
    ends = [
        (c["call_id"], c["outcome"], c["ended_by"]) for s in steps for c in s["unfinished_calls"]
    ]
    assert ends == [
        ("call-0", "cut", "closing_report"),
        ("call-1", "timeout", "closing_report"),
        ("call-0", "cut", "closing_report"),
    ]


async def test_show_leaves_a_crashed_run_s_steps_open(tmp_path: Path) -> None:
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    await _journaled(journal, run_id, closed=False)  # its process died: no closing event
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    assert code == 0, err
    shown = json.loads(out)
    assert shown["status"] == "stalled"
    steps = shown["steps"]
    assert [(s["status"], s["ended_by"], s["error"]) for s in steps] == [
        ("dispatched", None, None),
        ("dispatched", None, None),
    ]
    calls = [(c["outcome"], c["ended_by"]) for s in steps for c in s["unfinished_calls"]]
    assert calls == [(None, None)] * 3
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert "closing report" not in out
    assert out.count("[dispatched, no report]") == 2


async def test_a_pause_s_result_is_not_taken_for_the_run_s_closing_event(tmp_path: Path) -> None:
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    await _journaled(journal, run_id, closed=False, paused_then_ended=True)
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    assert code == 0, err
    shown = json.loads(out)
    assert shown["status"] == "cancelled"
    assert [(s["status"], s["ended_by"]) for s in shown["steps"]] == [("dispatched", None)] * 2


def _report(run_id: str, version: int, outcome: str) -> StepReport:
    call = ToolOutcome(
        tool="issue_refund", call_id="call-0", arguments={}, content="", error_type=outcome
    )
    return StepReport(
        run_id=run_id,
        plan_version=version,
        step_id="s1",
        attempt=1,
        worker="billing",
        status="cancelled",
        error=f"v{version}",
        tool_outcomes=(call,),
    )


async def test_a_step_id_planned_again_ends_from_its_own_version_s_report(tmp_path: Path) -> None:
    # s1 of v1, cut by a replan, and s1 of v2, cut by the cancel: each call "call-0" (a
    # scripted model's ids repeat); each ends as its own version's report says.
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    records: list[Record] = []
    for version in (1, 2):
        records += [
            PlanVersion(run_id=run_id, version=version, plan={"version": version, "steps": []}),
            StepDispatched(run_id=run_id, plan_version=version, step_id="s1", worker="billing"),
            msgspec.structs.replace(intent(run_id), plan_version=version),
        ]
    steps = (_report(run_id, 2, "timeout"), _report(run_id, 1, "cut"))
    failed = RunFailed(run_id=run_id, error_type="RunCancelled", message="stop", steps=steps)
    records += [
        EventRecorded(run_id=run_id, kind="RunFailed", event=msgspec.to_builtins(failed)),
        RunFinished(run_id=run_id, status="cancelled", error="RunCancelled: stop"),
    ]
    opened = await open_journal(journal)
    try:
        lease = await opened.create_run(created(run_id), owner="gone:1", ttl=0.001)
        await opened.append_all(lease, records)
        await opened.release(lease)
    finally:
        await opened.close()
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    assert code == 0, err
    ends = [
        (s["plan_version"], s["error"], [c["outcome"] for c in s["unfinished_calls"]])
        for s in json.loads(out)["steps"]
    ]
    assert ends == [(1, "v1", ["cut"]), (2, "v2", ["timeout"])]


async def test_a_closing_event_that_cannot_be_read_is_said(tmp_path: Path) -> None:
    # It was left out with a log line nobody saw (show prints no log): the steps read as
    # ended by nothing, with no word why.
    journal, run_id = str(tmp_path / "runs.db"), new_id()
    broken: dict[str, JsonValue] = {"type": "RunFailed", "run_id": run_id, "steps": "no list"}
    records: list[Record] = [
        StepDispatched(run_id=run_id, plan_version=1, step_id="s1", worker="billing"),
        intent(run_id),
        EventRecorded(run_id=run_id, kind="RunFailed", event=broken),
        RunFinished(run_id=run_id, status="failed", error="RunCancelled: stop"),
    ]
    opened = await open_journal(journal)
    try:
        lease = await opened.create_run(created(run_id), owner="gone:1", ttl=0.001)
        await opened.append_all(lease, records)
        await opened.release(lease)
    finally:
        await opened.close()
    note = "its closing event (RunFailed) could not be read (Expected `array`, got `str`"
    code, out, err = await run_cli("show", run_id, "--journal", journal)
    assert code == 0, err
    assert f"note: {note}" in out
    assert "so the steps and tool calls it ended are shown with no end\n" in out
    code, out, err = await run_cli("show", run_id, "--json", "--journal", journal)
    assert code == 0, err
    shown = json.loads(out)
    (said,) = shown["not_shown"]
    assert said.startswith(note)
    assert [s["ended_by"] for s in shown["steps"]] == [None]
