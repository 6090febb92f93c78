"""``regiment show RUN_ID``: a run as its journal records it (plan versions, steps with their
status, output and unfinished tool calls, answer, usage, model and tool calls), as text or
one JSON object; what an ended run cut gets its end from the run's closing event
(``_show_ends``)."""

from __future__ import annotations

import argparse
import io
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TextIO

import msgspec

from regiment._calls import call_counts
from regiment._text import counted, visible
from regiment.cli._journal_cmds import (
    NewerNotes,
    journal_exists,
    no_run,
    open_cli_journal,
    resume_hint,
    said,
)
from regiment.cli._show_ends import with_ends
from regiment.cli._show_marks import judgements, print_unfinished, step_mark
from regiment.errors import ConfigError, JournalError, UnknownRun
from regiment.journal import (
    ApprovalDecided,
    ApprovalRequested,
    EventRecorded,
    PlanVersion,
    Record,
    RunCreated,
    RunFinished,
    RunInfo,
    StepDispatched,
    StepReported,
    TeamFile,
    ToolCallFinished,
    ToolCallStarted,
    read_run,
)
from regiment.tools import Deny

__all__ = ("show_command",)


async def show_command(
    args: argparse.Namespace,
    spec: str,
    stdout: TextIO,
    *,
    flag: str = "",
    source: str = "--journal",
) -> int:
    """``regiment show RUN_ID``: plan versions, steps with status and output, answer, usage,
    model and tool calls (``flag``: what a command it suggests adds to read ``spec``, `` --journal J``;
    ``source``: where ``spec`` came from, as ``journal_source`` says)."""
    if not journal_exists(spec):
        raise ConfigError(f"no journal at {spec}, so no run {said(args.run_id)}")
    journal = await open_cli_journal(spec, read_only=True, source=source)
    newer, log = NewerNotes(), logging.getLogger("regiment.journal")
    log.addHandler(newer)
    try:
        info, entries = await read_run(journal, args.run_id)  # one snapshot: status and records
        records = [entry.record for entry in entries]
    except UnknownRun as exc:
        raise no_run(spec, args.run_id, flag) from exc
    except JournalError as exc:
        raise ConfigError(str(exc)) from exc
    finally:
        log.removeHandler(newer)
        await journal.close()
    notes: list[str] = []  # what is shown without what it could not read, and why
    shown = _shown(info, records, notes)
    notes[:0] = newer.notes  # records a newer regiment wrote: shown without them
    if notes:
        shown["not_shown"] = notes
    if args.json:
        print(json.dumps(shown), file=stdout)
    else:  # what models and tools wrote, control characters as \xNN (JSON escapes them)
        text = io.StringIO()
        _print_shown(shown, text, flag)
        stdout.write(visible(text.getvalue()))
        stdout.flush()
    return 0


def _shown(info: RunInfo, records: Sequence[Record], notes: list[str]) -> dict[str, object]:
    plans: list[object] = []
    steps: list[dict[str, object]] = []
    answer, error, paused = None, None, False
    team_file: str | None = None
    app_dir: str | None = None
    sent: dict[tuple[int, str], str] = {}  # dispatched steps with no report yet: their worker
    asked: dict[str, ApprovalRequested] = {}  # undecided approvals, by id
    for record in records:
        match record:
            case RunCreated(team_file=TeamFile(path=team_file, app_dir=app_dir)):
                pass
            case PlanVersion(version=version, plan=plan):
                plans.append({"version": version, "steps": plan.get("steps", [])})
            case StepDispatched(plan_version=version, step_id=step_id, worker=worker):
                sent[(version, step_id)] = worker
            case StepReported():
                sent.pop((record.plan_version, record.step_id), None)
                steps.append(
                    {
                        "plan_version": record.plan_version,
                        "step_id": record.step_id,
                        "worker": record.worker,
                        "status": record.status,
                        "committed": record.committed,
                        "output": record.output,
                        "error": record.report.get("error"),
                    }
                )
            case ApprovalRequested(approval_id=approval_id):
                asked[approval_id] = record
            case ApprovalDecided(approval_id=approval_id):
                asked.pop(approval_id, None)
            case EventRecorded(event={"type": "RunCompleted", "result": {"status": status}}):
                paused = status == "paused"  # its last stop; a resume goes on after it
            case RunFinished(answer=text, error=failure):
                answer, error = text, failure
            case RunCreated() | _:
                pass
    steps = _with_unfinished_calls([*steps, *_in_flight(sent, asked.values())], records)
    steps = with_ends(steps, records, info.run_id, info.status, notes)  # from its closing event
    return {
        "run_id": info.run_id,
        "team": info.team,
        "team_file": team_file,
        "app_dir": app_dir,
        "goal": info.goal,
        "status": info.status,
        "session": info.session,
        "started_at": info.started_at.isoformat(),
        "plans": plans,
        "steps": steps,
        "answer": answer,
        "error": error,
        **_spent(records),
        "paused": paused,
    }


def _spent(records: Sequence[Record]) -> dict[str, object]:
    """What the run spent, as its last end counted it (a resumed run's: the whole run's):
    ``usage``, ``estimated_usage`` (the part charged as an estimate, calls cut in flight,
    see ``RunResult.estimated_usage``; ``None`` if no part is), ``model_calls`` and
    ``tool_calls``. An end is a ``RunCompleted`` (a pause's too: what it spent so far), a
    ``RunFailed`` (a failed run's ``RunFinished`` has no result) or a ``RunFinished``'s
    result; with none (running, or its process died first), each is ``None``."""
    end: Mapping[str, object] | None = None
    for record in records:
        match record:
            case EventRecorded(event={"type": "RunFailed"} as failed):
                end = failed
            case EventRecorded(event={"type": "RunCompleted", "result": dict() as completed}):
                end = completed
            case RunFinished(result=result) if result:
                end = result
            case _:
                pass
    if end is None:
        return dict.fromkeys(("usage", "estimated_usage")) | call_counts(None)
    part = end.get("estimated_usage")
    return {
        "usage": end.get("usage"),
        "estimated_usage": part if isinstance(part, dict) and any(part.values()) else None,
        **call_counts(end),  # as the service's run view counts them
    }


def _with_unfinished_calls(
    steps: list[dict[str, object]], records: Sequence[Record]
) -> list[dict[str, object]]:
    """``steps``, each with its ``unfinished_calls`` (see ``_unfinished_calls``) and, for a
    report not committed, why (``judged``: its check rejected it, a replan dropped it)."""
    unfinished, judged = _unfinished_calls(records), judgements(records)
    for step in steps:
        key = (step["plan_version"], step["step_id"])
        step["unfinished_calls"] = unfinished.get(key, [])
        step["judged"] = None if step["committed"] else judged.get(key)
    return steps


def _unfinished_calls(records: Sequence[Record]) -> dict[tuple[object, object], list[object]]:
    """The tool calls whose intent is journaled with no result, by step: cut short (a
    cancel, a replan), or in flight when the run stopped. Such a body may have acted.
    A call whose approval is undecided, or was denied, has not run: it is left out."""
    started: dict[tuple[int, str, int], ToolCallStarted] = {}
    asked: dict[str, tuple[int, str, int]] = {}  # approval id -> its call's key
    for record in records:
        match record:
            case ToolCallStarted(plan_version=version, step_id=step_id, call_index=index):
                started[(version, step_id, index)] = record
            case ToolCallFinished(plan_version=version, step_id=step_id, call_index=index):
                started.pop((version, step_id, index), None)
            case ApprovalRequested(plan_version=version, step_id=step_id, call_index=index):
                asked[record.approval_id] = (version, step_id, index)
            case ApprovalDecided(approval_id=approval_id, decision=decision):
                key = asked.pop(approval_id, None)
                if key is not None and isinstance(decision, Deny):
                    started.pop(key, None)
            case _:
                pass
    for key in asked.values():  # undecided: `show` says the step waits for a decision
        started.pop(key, None)
    calls: dict[tuple[object, object], list[object]] = {}
    for (version, step_id, index), call in started.items():
        calls.setdefault((version, step_id), []).append(
            {
                "call_index": index,
                "tool": call.tool,
                "call_id": call.call_id,
                "arguments": call.arguments,
                "idempotency_key": call.idempotency_key,
            }
        )
    return calls


def _in_flight(
    sent: Mapping[tuple[int, str], str], asked: Iterable[ApprovalRequested]
) -> list[dict[str, object]]:
    """The steps dispatched with no report (in flight when the run stopped, say); one
    whose tool call waits for a decision is ``awaiting_approval``, with the call."""
    waiting: dict[tuple[int, str], list[str]] = {}
    for request in asked:
        call = f"{request.request.tool_name} ({request.approval_id})"
        waiting.setdefault((request.plan_version, request.step_id), []).append(call)
    return [
        {
            "plan_version": version,
            "step_id": step_id,
            "worker": worker,
            "status": "awaiting_approval" if (version, step_id) in waiting else "dispatched",
            "committed": False,
            "output": ", ".join(waiting.get((version, step_id), ())),
            "error": None,
        }
        for (version, step_id), worker in sent.items()
    ]


def _print_shown(shown: dict[str, object], stdout: TextIO, flag: str) -> None:
    print(f"run {shown['run_id']} ({shown['team']}): {shown['status']}", file=stdout)
    if shown["status"] == "stalled" and shown["paused"]:  # else it would list paused
        print(
            "paused, and its approval requests have all been decided since: it waits to be "
            f"resumed ({resume_hint(shown['team_file'], str(shown['run_id']), flag)})",
            file=stdout,
        )
    print(f"goal: {shown['goal']}", file=stdout)
    for note in shown.get("not_shown", ()):  # type: ignore[attr-defined]
        print(f"note: {note}", file=stdout)
    if shown["team_file"] is not None:
        print(f"team file: {shown['team_file']}", file=stdout)
    plans = shown["plans"]
    assert isinstance(plans, list)
    for plan in plans:
        ids = ", ".join(str(s.get("id")) for s in plan["steps"]) or "no steps"
        print(f"plan v{plan['version']}: {ids}", file=stdout)
    steps = shown["steps"]
    assert isinstance(steps, list)
    for step in steps:
        said = step["output"] or step.get("error") or ""  # a failed step: why
        line = f"  v{step['plan_version']} {step['step_id']} [{step_mark(step, shown)}]"
        print(f"{line} {said}" if said else line, file=stdout)  # no trailing space
        for call in step["unfinished_calls"]:
            print_unfinished(call, step, shown, stdout=stdout)
    if shown["answer"] or (shown["answer"] is not None and not shown["error"]):
        print(f"answer: {shown['answer'] or '(empty)'}", file=stdout)
    if shown["error"]:
        print(f"error: {shown['error']}", file=stdout)
    calls, tools = shown["model_calls"], shown["tool_calls"]
    if isinstance(calls, int) and isinstance(tools, int):  # as its last end counted them
        print(f"calls: {counted(calls, 'model call')}, {counted(tools, 'tool call')}", file=stdout)
    if shown["usage"] is not None:
        print(f"usage: {msgspec.json.encode(shown['usage']).decode()}", file=stdout)
    if shown["estimated_usage"] is not None:  # calls cut in flight, charged at their most
        estimate = msgspec.json.encode(shown["estimated_usage"]).decode()
        print(f"  of it estimated (calls cut in flight): {estimate}", file=stdout)
