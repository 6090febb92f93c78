"""``regiment resume RUN_ID --events jsonl --events-file F``: F holds the whole run once, in
order. It was overwritten with the resumed stream, which replays the journal's events: the
first part's tool calls, its approval request and its pause were lost from the file.

Each ``regiment resume`` is a real ``python -m regiment`` process on a real SQLite journal,
on both backends. The run it resumes is made, paused and approved by the same commands
in this process (``run_cli``, on the test's backend): a child each took 3-8 s on a
loaded machine, and made this file the slowest of the suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from regiment.hierarchy import JournaledEvents
from regiment.journal import open_journal
from tests.cli.helpers import regiment_process, run_cli

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "refund" / "team_approval.toml")
GOAL = "For order 77120 check refund eligibility, issue the refund if eligible, then email the customer."
LIVE = {"ToolCallStarted", "ToolCallFinished", "TextDelta"}  # events a journal does not keep


def _command(backend: str, *argv: str, cwd: Path, events: Path) -> str:
    """``regiment ARGV`` on the journal in ``cwd``, its events to ``events``; its stderr."""
    done = regiment_process(
        *argv,
        "--model",
        "scripted",
        "--backend",
        backend,
        "--journal",
        "runs.db",
        "--events",
        "jsonl",
        "--events-file",
        str(events),
        cwd=cwd,
    )
    assert done.returncode in (0, 3), done.stderr
    return done.stderr


async def _paused_and_approved(cwd: Path, events: Path) -> str:
    """The refund run, paused at its approval (its events in ``events``), then approved."""
    journal = str(cwd / "runs.db")
    code, _, err = await run_cli(
        *("run", EXAMPLE, GOAL, "--model", "scripted", "--app-dir", str(REPO)),
        *("--journal", journal, "--events", "jsonl", "--events-file", str(events)),
    )
    assert code == 3, err
    (paused,) = [line for line in err.splitlines() if line.startswith("paused:")]
    run_id = paused.rsplit(" ", 1)[1]
    code, listed, err = await run_cli("approvals", run_id, "--json", "--journal", journal)
    assert code == 0, err
    request = json.loads(listed)["request_id"]
    code, _, err = await run_cli("approve", run_id, request, "--journal", journal)
    assert code == 0, err
    return run_id


async def _journaled(cwd: Path, run_id: str) -> list[str]:
    """The run's journaled events, each as the events file's line for it."""
    journal = await open_journal(str(cwd / "runs.db"))
    try:
        events = (await JournaledEvents.read(journal, run_id)).events
    finally:
        await journal.close()
    return [msgspec.json.encode(event).decode() for event in events]


def _types(lines: list[str]) -> list[str]:
    return [json.loads(line)["type"] for line in lines]


async def test_the_file_of_run_then_resume_holds_the_whole_run_once(
    tmp_path: Path, anyio_backend: str
) -> None:
    events = tmp_path / "events.jsonl"
    run_id = await _paused_and_approved(tmp_path, events)
    first = events.read_text().splitlines()
    assert _types(first)[-3:] == ["ApprovalRequested", "ToolCallFinished", "RunCompleted"]

    _command(anyio_backend, "resume", run_id, cwd=tmp_path, events=events)
    lines = events.read_text().splitlines()
    assert lines[: len(first)] == first  # the first part, its pause too, is still there
    types = _types(lines)
    assert types.count("RunStarted") == 1
    assert types.count("ApprovalRequested") == 1
    assert [json.loads(x)["result"]["status"] for x in lines if "RunCompleted" in x] == [
        "paused",
        "completed",
    ]
    # every journaled event once, in the journal's order (the numbers the service gives)
    assert [x for x in lines if json.loads(x)["type"] not in LIVE] == await _journaled(
        tmp_path, run_id
    )
    assert types.count("ToolCallStarted") == types.count("ToolCallFinished") == 4


async def test_a_new_file_gets_the_whole_run_and_a_cut_last_line_is_cut_off(
    tmp_path: Path, anyio_backend: str
) -> None:
    run_id = await _paused_and_approved(tmp_path, tmp_path / "first.jsonl")
    new = tmp_path / "new.jsonl"
    _command(anyio_backend, "resume", run_id, cwd=tmp_path, events=new)
    lines = new.read_text().splitlines()
    assert [x for x in lines if json.loads(x)["type"] not in LIVE] == await _journaled(
        tmp_path, run_id
    )
    assert _types(lines)[-1] == "RunCompleted"

    # A file whose writer died mid-line: the cut line goes, the rest is kept, nothing twice.
    again = await _paused_and_approved(tmp_path, tmp_path / "cut.jsonl")
    cut = tmp_path / "cut.jsonl"
    whole = cut.read_text().splitlines()
    cut.write_text("\n".join(whole[:-1]) + "\n" + whole[-1][:20])
    _command(anyio_backend, "resume", again, cwd=tmp_path, events=cut)
    lines = cut.read_text().splitlines()
    assert lines[: len(whole) - 1] == whole[:-1]
    assert [x for x in lines if json.loads(x)["type"] not in LIVE] == await _journaled(
        tmp_path, again
    )


async def test_a_file_of_another_run_is_refused_not_overwritten(
    tmp_path: Path, anyio_backend: str
) -> None:
    other = tmp_path / "other.jsonl"
    await _paused_and_approved(tmp_path, other)
    run_id = await _paused_and_approved(tmp_path, tmp_path / "mine.jsonl")
    before, records = other.read_bytes(), await _records(tmp_path, run_id)
    done = regiment_process(
        *("resume", run_id, "--journal", "runs.db", "--backend", anyio_backend),
        *("--events", "jsonl", "--events-file", str(other)),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"regiment: error: --events-file {other}: line 1 is not an event of run {run_id}, "
        "whose events regiment resume adds to the file: give another file (or a new one: "
        "it gets the whole run), or move this one away"
    )
    assert other.read_bytes() == before
    assert await _records(tmp_path, run_id) == records  # not resumed: nothing journaled


async def _records(cwd: Path, run_id: str) -> int:
    journal = await open_journal(str(cwd / "runs.db"))
    try:
        return len(await journal.read(run_id))
    finally:
        await journal.close()
