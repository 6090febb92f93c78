"""``--journal``, ``regiment runs``, ``regiment show`` and ``regiment resume``.

Runs journal by default to ``.regiment/journal.db`` under the current directory
(a temporary one: see conftest). A stalled run is made the way a crash leaves
one: the head of a finished run's records, in a run nobody holds.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from regiment.cli import run_async
from regiment.journal import (
    EventRecorded,
    ModelCallFinished,
    Record,
    RunCreated,
    SqliteJournal,
    StepDispatched,
)

from .helpers import run_cli, write_team

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
REFUND = str(REPO / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


async def _cli(*argv: str, environ: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(list(argv), stdout=out, stderr=err, environ=environ or {})
    return code, out.getvalue(), err.getvalue()


async def _journaled_run(*extra: str) -> tuple[str, str]:
    code, out, err = await _cli("run", REFUND, GOAL, "--model", "scripted", *extra)
    assert code == 0, err
    code, listed, err = await _cli(
        "runs", "--json", *extra[:2] if extra[:1] == ("--journal",) else ()
    )
    assert code == 0, err
    return json.loads(listed.splitlines()[0])["run_id"], out


async def test_run_journals_by_default_and_its_first_event_names_the_run(tmp_path: Path) -> None:
    code, out, err = await _cli("run", REFUND, GOAL, "--model", "scripted", "--events", "jsonl")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["type"] == "RunStarted"
    run_id = events[0]["run_id"]
    assert (tmp_path / ".regiment" / "journal.db").is_file()
    code, listed, err = await _cli("runs", "--json")
    assert code == 0, err
    [row] = [json.loads(line) for line in listed.splitlines()]
    assert row["run_id"] == run_id
    assert (row["team"], row["goal"], row["status"], row["session"]) == (
        "refunds",
        GOAL,
        "completed",
        None,
    )
    assert set(row) == {"run_id", "team", "goal", "status", "started_at", "updated_at", "session"}
    code, plain, _ = await _cli("runs")
    assert plain.startswith(f"{run_id}  completed")
    assert (await _cli("runs", "--status", "stalled"))[1] == ""


async def test_journal_option_env_and_no_journal(tmp_path: Path) -> None:
    chosen = tmp_path / "chosen.db"
    code, _, err = await _cli("run", REFUND, GOAL, "--model", "scripted", "--journal", str(chosen))
    assert code == 0, err
    env = {"REGIMENT_JOURNAL": str(chosen)}
    assert len((await _cli("runs", environ=env))[1].splitlines()) == 1
    code, _, err = await _cli("run", REFUND, GOAL, "--model", "scripted", "--no-journal")
    assert code == 0, err
    assert not (tmp_path / ".regiment").exists()
    assert len((await _cli("runs", "--journal", str(chosen)))[1].splitlines()) == 1


async def test_show_gives_plans_steps_answer_and_usage() -> None:
    run_id, answer = await _journaled_run("--session", "ticket-4411")
    code, out, err = await _cli("show", run_id, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["status"] == "completed"
    assert shown["session"] == "ticket-4411"
    assert [p["version"] for p in shown["plans"]] == [1, 2]
    assert shown["answer"] == answer.rstrip("\n")
    assert shown["usage"]["input_tokens"] > 0
    committed = [s for s in shown["steps"] if s["committed"]]
    assert committed
    assert all(s["output"] for s in committed)
    code, text, _ = await _cli("show", run_id)
    assert code == 0
    assert "plan v2:" in text
    assert "answer: " in text


async def test_unknown_runs_and_bad_files_exit_2(tmp_path: Path) -> None:
    await _journaled_run()
    code, _, err = await _cli("show", "run-nope")
    assert code == 2
    assert "run-nope" in err
    code, _, err = await _cli("resume", REFUND, "run-nope", "--model", "scripted")
    assert code == 2
    assert "run-nope" in err
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"these are my notes, not a journal\n" * 100)
    before = bad.read_bytes()
    for argv in (("runs",), ("show", "run-1"), ("run", REFUND, GOAL, "--model", "scripted")):
        code, _, err = await _cli(*argv, "--journal", str(bad))
        assert code == 2, (argv, err)
        assert str(bad) in err
    assert bad.read_bytes() == before


async def test_show_lists_a_stalled_run_s_step_that_was_sent_and_never_reported(
    tmp_path: Path,
) -> None:
    run_id, _ = await _journaled_run()
    stalled = await _stall(tmp_path / ".regiment" / "journal.db", run_id, StepDispatched)
    code, out, err = await _cli("show", stalled)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if "[dispatched, no report]" in x]
    assert line == "  v1 s1 [dispatched, no report]"  # it ended in a space
    code, out, err = await _cli("show", stalled, "--json")
    (step,) = json.loads(out)["steps"]
    assert (step["step_id"], step["status"], step["committed"]) == ("s1", "dispatched", False)


async def test_show_of_a_plan_of_no_steps_and_an_empty_answer_ends_no_line_in_a_space(
    tmp_path: Path,
) -> None:
    # "plan v1: " and "answer: " ended in a space, and said nothing.
    team = write_team(tmp_path, "idle")
    code, _, err = await run_cli("run", str(team), "nothing to do", "--app-dir", str(tmp_path))
    assert code == 0, err
    code, listed, err = await run_cli("runs", "--json")
    code, out, err = await run_cli("show", json.loads(listed)["run_id"])
    assert code == 0, err
    assert "\nplan v1: no steps\nanswer: (empty)\n" in out
    assert [line for line in out.splitlines() if line != line.rstrip()] == []


async def test_runs_with_a_journal_named_that_is_not_there_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A typo in --journal must not look like an empty journal.
    missing = tmp_path / "typo" / "j.db"
    code, out, err = await _cli("runs", "--journal", str(missing))
    assert (code, out) == (2, "")
    assert f"--journal {missing}: no journal there" in err
    assert not missing.parent.exists()  # reading never creates one
    code, out, err = await _cli("runs")  # the default journal, not made yet: no runs
    assert (code, out, err) == (0, "", "")
    # and no approvals (it was exit 2, "no journal at ...", where `runs` listed nothing)
    code, out, err = await _cli("approvals")
    assert (code, out, err) == (0, "", "")
    code, out, err = await _cli("approvals", "--journal", str(missing))
    assert (code, out) == (2, "")
    assert f"no journal at {missing}" in err
    for command in ("runs", "show"):  # they only read: no --no-journal to offer
        code, _, _ = await _cli(command, "x" if command == "show" else "--json", "--no-journal")
        assert code == 2
        err = capsys.readouterr().err
        assert "regiment: error: unrecognized arguments: --no-journal; " in err
        assert f"see `regiment {command} --help`" in err


async def test_an_option_another_command_takes_is_that_commands_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `--session` belongs to `run`; under `resume` the error is resume's usage, with why.
    code, out, _ = await _cli("resume", REFUND, "some-run", "--session", "s1")
    assert (code, out) == (2, "")
    err = capsys.readouterr().err
    assert err.startswith("usage: regiment resume ")
    assert "regiment: error: unrecognized arguments: --session s1; " in err
    assert "a resumed run keeps the session it was started with" in err


async def _stall(path: Path, run_id: str, keep: float | type[Record]) -> str:
    """Copy the head of a finished run into a new run id that nobody holds (a crash's
    leftovers): a share of its records, or those up to the first of a kind."""
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(run_id)]
        if isinstance(keep, float):
            head = records[: max(2, int(len(records) * keep))]
        else:
            head = records[: 1 + next(i for i, r in enumerate(records) if isinstance(r, keep))]
        stalled = run_id + "-x"
        # The same records under the new id, event bodies and reports included.
        moved = [
            msgspec.json.decode(
                msgspec.json.encode(r).replace(run_id.encode(), stalled.encode()), type=Record
            )
            for r in head
        ]
        assert isinstance(moved[0], RunCreated)
        lease = await journal.create_run(moved[0], owner="dead:1", ttl=60)
        await journal.append_all(lease, moved[1:])
        await journal.release(lease)
    finally:
        await journal.close()
    return stalled


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9])
async def test_resume_finishes_a_stalled_run_with_the_same_answer(
    tmp_path: Path, keep: float
) -> None:
    run_id, answer = await _journaled_run()
    path = tmp_path / ".regiment" / "journal.db"
    stalled = await _stall(path, run_id, keep)
    code, listed, _ = await _cli("runs", "--status", "stalled", "--json")
    assert [json.loads(line)["run_id"] for line in listed.splitlines()] == [stalled]
    code, out, err = await _cli(
        "resume",
        REFUND,
        stalled,
        "--model",
        "scripted",
        "--events",
        "jsonl",
        "--events-file",
        str(tmp_path / "ev.jsonl"),
    )
    assert code == 0, err
    assert out == answer
    events = [json.loads(line) for line in (tmp_path / "ev.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "RunStarted"
    assert events[-1]["type"] == "RunCompleted"
    code, _, err = await _cli("resume", REFUND, stalled, "--model", "scripted")
    assert code == 2
    assert "already finished" in err
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(stalled)]
    finally:
        await journal.close()
    kinds = [r.kind for r in records if isinstance(r, EventRecorded)]
    assert kinds.count("RunStarted") == 1  # replayed events are not journaled twice
    keys = [r.call_key for r in records if isinstance(r, ModelCallFinished)]
    assert len(keys) == len(set(keys))


def _changed_copy(changed: Path) -> Path:
    text = Path(REFUND).read_text(encoding="utf-8")
    assert "concurrency = 4" in text
    changed.write_text(text.replace("concurrency = 4", "concurrency = 3"), encoding="utf-8")
    return changed


async def test_resume_refuses_a_changed_team_file_unless_forced(tmp_path: Path) -> None:
    run_id, _ = await _journaled_run()
    stalled = await _stall(tmp_path / ".regiment" / "journal.db", run_id, 0.5)
    changed = _changed_copy(tmp_path / "team.toml")
    code, _, err = await _cli(
        "resume", str(changed), stalled, "--model", "scripted", "--app-dir", str(REPO)
    )
    assert code == 2
    assert "--force" in err
    code, _, err = await _cli(
        "resume", str(changed), stalled, "--model", "scripted", "--app-dir", str(REPO), "--force"
    )
    assert code == 0, err


async def test_runs_limit_lists_only_the_newest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `regiment runs` had no way to list less than the whole journal: on one of 300,000
    # runs it took seconds before it printed its first line, whatever read it.
    path = tmp_path / "runs.db"
    async with await SqliteJournal.open(path) as journal:
        for n in range(5):
            run = RunCreated(
                run_id=f"run-{n}",
                team="t",
                config_hash="c",
                goal=f"goal {n}",
                session=None,
                created_at=datetime(2027, 1, 1, n, tzinfo=UTC),
            )
            await journal.release(await journal.create_run(run, owner="o", ttl=30))
    code, out, err = await _cli("runs", "--limit", "2", "--journal", str(path))
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["run-4", "run-3"]
    code, out, _ = await _cli("runs", "--limit", "0", "--journal", str(path))
    assert (code, out) == (2, "")
    assert "--limit: must be a whole number of at least 1, not '0'" in capsys.readouterr().err
