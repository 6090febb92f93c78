"""The kill/resume torture's fast version (``bench/crash_torture.py`` is the long one).

``regiment run`` of ``bench/torture/team.toml`` (parallel steps, a replan, a critique
round, tools whose side effects go to files outside the journal) is SIGKILLed at a
random moment, ``regiment resume`` finishes it (SQLite, asyncio), and the run must end
as the uninterrupted one did (run here in this process): the same answer and committed
steps, each side effect once per idempotency key, a tool body run twice only if it was
in flight at the kill, the journal in order with no record twice. The approvals team's
run pauses for omni's charge (or is killed first); ``regiment approve`` in another
process races the ``regiment resume`` (PostgreSQL, trio). The nested team's (the approvals
team as an office's one worker, SQLite, trio) must too, its nested runs' records read in
order and their tool calls each journaled; every run, nested ones too, reads clean with
``regiment show --json`` in another process. Each case runs two to four
``regiment`` processes (a process's start is most of its ~1.5 s); the long version
kills hundreds of times.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from crash_checks import Ledger
from crash_torture import GOAL, TEAMS, Baseline, Scenario, Tally, torture

from regiment.config import load_team
from regiment.journal import open_journal
from regiment.tools import Approve


async def _baseline(name: str, folder: Path) -> Baseline:
    """The uninterrupted run, in this process (approvals: paused, approved, resumed)."""
    journal = await open_journal(str(folder / "runs.db"))
    try:
        async with load_team(TEAMS[name]).start(journal=journal) as running:
            began = time.monotonic()
            result = await running.run(GOAL)
            seconds = time.monotonic() - began  # to its pause (approvals, nested) or its end
            if name in ("approvals", "nested"):
                assert result.status == "paused"
                for asked in result.pending_approvals:
                    await running.approve(asked.request_id, Approve())
                result = await running.resume(result.run_id)
        entries = await journal.read(result.run_id)
    finally:
        await journal.close()
    return Baseline(result.answer, entries, Ledger(folder), seconds)


# Subprocesses killed and resumed (21-39 s in a loaded tests/journal run): room beyond
# the suite's 60 s, where a timeout ends the whole xdist worker. Its waits are bounded.
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("name", "backend", "loop"),
    [
        ("plain", "sqlite", "asyncio"),
        ("approvals", "postgres", "trio"),
        ("nested", "sqlite", "trio"),
    ],
)
def test_a_run_killed_at_random_resumes_as_if_never_killed(
    name: str,
    backend: str,
    loop: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "baseline"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(TEAMS[name].parent))  # the team file's module paths
    monkeypatch.setenv("TORTURE_LEDGER", str(folder))
    base = anyio.run(_baseline, name, folder)
    assert base.ledger.effects(), "the uninterrupted run had side effects"
    if backend == "sqlite":
        journal = str(tmp_path / "runs.db")
    else:
        journal = str(request.getfixturevalue("postgres_url"))
    scenario = Scenario(name, journal, tmp_path / "trial", loop=loop)
    tally = Tally()
    reach = 0.4 if name in ("approvals", "nested") else 0.7  # they pause 3/5 through
    torture(scenario, base, tally, seed=len(request.node.name), kills=1, reach=reach)
    assert tally.kills >= 1, tally  # (an approve may be killed too)
    assert tally.trials == 1, tally.details
    assert not tally.anomalies, tally.details
