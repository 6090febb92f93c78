"""``regiment approve`` with a run id or a request id that is wrong says which one is, and
how to list the right ones; ``regiment approvals --limit N`` lists N and says how many more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import run_cli
from .test_approvals_cli import _paused_run

pytestmark = pytest.mark.anyio


async def test_an_unknown_run_is_named_as_the_wrong_id(tmp_path: Path) -> None:
    # It said only "`regiment runs` lists them": runs, not the requests to decide.
    journal = str(tmp_path / "runs.db")
    _, request_id = await _paused_run(journal)
    code, _, err = await run_cli("approve", "run-nope", request_id, "--journal", journal)
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(f"regiment: error: RUN_ID is wrong: journal {journal} has no run ")
    # the command it suggests reads this journal, not the default one
    assert line.endswith(
        f"`regiment approvals --journal {journal}` lists each pending request with its run"
    )


async def test_a_request_of_another_run_names_its_run(tmp_path: Path) -> None:
    # It said "no approval request ... in journal", though the journal has it (of another run).
    journal = str(tmp_path / "runs.db")
    first, first_request = await _paused_run(journal)
    second, _ = await _paused_run(journal)
    code, _, err = await run_cli("approve", second, first_request, "--journal", journal)
    assert code == 2
    (line,) = err.splitlines()
    assert line == (
        f"regiment: error: REQUEST_ID {first_request} is of run {first}, not of run {second}: "
        f"decide it with `regiment approve --journal {journal} {first} {first_request}`; "
        f"`regiment approvals --journal {journal} {second}` lists the requests of run {second}"
    )  # the commands name the journal: without it they read the default one
    code, out, _ = await run_cli("approvals", "--journal", journal)  # both still pending
    assert (code, len(out.splitlines())) == (0, 2)


async def test_an_unknown_request_is_named_as_the_wrong_id(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.db")
    run_id, _ = await _paused_run(journal)
    code, _, err = await run_cli("approve", run_id, "apr-nope", "--journal", journal)
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(f"regiment: error: REQUEST_ID is wrong: run {run_id} has no ")
    assert f"`regiment approvals --journal {journal} {run_id}` lists its pending ones" in line


async def test_approvals_limit_lists_n_and_says_how_many_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = str(tmp_path / "runs.db")
    for _ in range(3):
        await _paused_run(journal)
    code, out, err = await run_cli("approvals", "--journal", journal, "--limit", "2")
    assert code == 0
    assert len(out.splitlines()) == 2
    assert err == "regiment: 1 more pending request not listed; raise --limit to see them\n"
    code, out, err = await run_cli("approvals", "--journal", journal, "--limit", "3", "--json")
    assert (code, err) == (0, "")
    assert len([json.loads(line) for line in out.splitlines()]) == 3
    code, _, _ = await run_cli("approvals", "--journal", journal, "--limit", "0")
    assert code == 2
    usage = capsys.readouterr().err  # argparse writes its usage errors to sys.stderr
    assert "argument --limit: must be a whole number of at least 1, not '0'" in usage


async def test_a_very_long_wrong_id_is_named_cut(tmp_path: Path) -> None:
    # A 5,000-character id (or --edit value) was written back whole in the error line.
    journal = str(tmp_path / "runs.db")
    run_id, request_id = await _paused_run(journal)
    long = "x" * 5000
    asked = {
        "run": await run_cli("approve", long, request_id, "--journal", journal),
        "request": await run_cli("approve", run_id, long, "--journal", journal),
        "approvals": await run_cli("approvals", long, "--journal", journal),
        "edit": await run_cli(
            "approve", run_id, request_id, "--edit", f"[{'1,' * 2500}1]", "--journal", journal
        ),
    }
    for what, (code, _, err) in asked.items():
        assert code == 2, what
        (line,) = err.splitlines()
        assert len(line) < 500, (what, line[:300])
        assert "characters)" in line, what
    code, out, _ = await run_cli("approvals", "--journal", journal)  # still pending
    assert (code, len(out.splitlines())) == (0, 1)
