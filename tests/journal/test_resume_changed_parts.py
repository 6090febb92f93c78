"""A resume under a changed team names what changed.

A run journals its team's config hash, and a resume refuses a team whose hash differs
unless forced; but the refusal only listed every kind of part that might have changed
("its workers, tools, models, prompts, budgets, approvals or guardrails changed"), and
a forced resume said nothing at all. A run now journals a short hash of each part
(``RunCreated.config_parts``), so the refusal, and a forced resume's WARNING, name the
parts: a worker added or removed, a worker's tool, model, prompt or limits, the budget.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from pathlib import Path

import msgspec
import pytest

from regiment import Approve, Budget, Planner, Prompts, Team, Worker, tool
from regiment.errors import ConfigError
from regiment.hierarchy.run._config_diff import changed_parts
from regiment.hierarchy.run._config_hash import config_hash, config_hashes
from regiment.journal import RunCreated, SqliteJournal

from .durable_team import GOAL, Ledger, make_team

pytestmark = pytest.mark.anyio


async def _paused(path: Path, ledger: Ledger) -> str:
    """A run of ``make_team`` paused for an approval, approved: resumable."""
    async with make_team(approve="bolt").start(journal=path) as running:
        paused = await running.run(GOAL, deps=ledger)
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        await running.approve(request.request_id, Approve(), by="ana")
    return paused.run_id


def _billing(team: Team) -> Worker:
    worker = team.workers[0]
    assert isinstance(worker, Worker)
    return worker


def _changes() -> list[tuple[str, Team, str, str]]:
    """(what, the changed team, what the refusal names, how the forced resume ends)."""
    team = make_team(approve="bolt")
    billing = _billing(team)
    (charge,) = billing.toolset.tools
    other_tool = [tool(description="Charge an account, at most once.")(charge.__wrapped__)]
    return [
        (
            "worker renamed",
            dataclasses.replace(
                team, workers=[dataclasses.replace(billing, tools=billing.tools, name="payments")]
            ),
            "worker 'billing' removed; worker 'payments' added",
            "paused",  # its call asks again: the decision was on billing's
        ),
        (
            "tool changed",
            dataclasses.replace(team, workers=[dataclasses.replace(billing, tools=other_tool)]),
            "worker 'billing': tool 'charge' changed",
            "completed",
        ),
        (
            "prompt",
            dataclasses.replace(
                team,
                workers=[
                    dataclasses.replace(billing, tools=billing.tools, system_prompt="Be brief.")
                ],
            ),
            "worker 'billing': its system prompt or iteration limit changed",
            "completed",
        ),
        (
            "budget",
            dataclasses.replace(team, budget=Budget(model_calls=99)),
            "the budget changed",
            "completed",
        ),
    ]


@pytest.mark.parametrize("case", range(4), ids=[c[0] for c in _changes()])
async def test_the_refusal_and_a_forced_resumes_warning_name_the_part(
    case: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, changed, named, status = _changes()[case]
    path, ledger = tmp_path / "runs.db", Ledger(tmp_path)
    run_id = await _paused(path, ledger)
    async with changed.start(journal=path) as running:
        with pytest.raises(ConfigError) as refused:
            await running.resume(run_id, deps=ledger)
        message = str(refused.value)
        assert "differently configured team 'billing-desk' " in message
        assert f": {named}, so a resume might not redo the same run; pass force=True" in message
        with caplog.at_level(logging.WARNING, logger="regiment.resume"):
            result = await running.resume(run_id, deps=ledger, force=True)
    assert result.status == status, result
    (warning,) = [r for r in caplog.records if "differently configured" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    assert warning.getMessage() == (
        f"run {run_id} is resumed (forced) by a differently configured team "
        f"'billing-desk': {named}; it may not redo the same run"
    )


async def test_a_run_journaled_before_part_hashes_says_it_cannot_tell(tmp_path: Path) -> None:
    path, ledger = tmp_path / "runs.db", Ledger(tmp_path)
    run_id = await _paused(path, ledger)
    journal = await SqliteJournal.open(path)  # the first record as an older regiment wrote it
    try:
        (first, *_) = await journal.read(run_id)
    finally:
        await journal.close()
    assert isinstance(first.record, RunCreated)
    assert first.record.config_parts
    old = msgspec.structs.replace(first.record, config_parts=None)
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "UPDATE journal_records SET body = ? WHERE run_id = ? AND seq = 1",
            (msgspec.json.encode(old), run_id),
        )
    db.close()
    async with _changes()[0][1].start(journal=path) as running:
        with pytest.raises(ConfigError, match="journaled by an older regiment, which did not"):
            await running.resume(run_id, deps=ledger)


def test_what_the_parts_say() -> None:
    before = {"budget": "a", "w:b": "1", "w:b/model": "2", "w:b/tool:t": "3", "w:c": "4"}
    now = {"budget": "x", "w:b": "9", "w:b/model": "2", "w:b/tool:u": "5", "w:d": "6"}
    assert changed_parts(before, now) == (
        "worker 'b': tool 't' removed; worker 'c' removed; worker 'b': tool 'u' added; "
        "worker 'd' added; the budget changed; worker 'b': its description changed"
    )
    nested = {"w:o": "1", "w:o/w:i": "2", "w:o/w:i/model": "3"}
    assert changed_parts(nested, {**nested, "w:o/w:i/model": "4"}) == (
        "worker 'o': worker 'i': its model changed"
    )
    assert changed_parts(nested, {"w:o": "1"}) == "worker 'o': worker 'i' removed"


def test_the_config_hash_is_the_one_runs_were_journaled_with() -> None:
    """Splitting the hash into parts left the whole one as it was: runs journaled (and
    paused) before resume under the same team."""
    team = make_team()  # (an approval predicate hashes by its module's name)
    assert config_hash(team) == config_hashes(team)[0] == KNOWN
    prompts = dataclasses.replace(
        team, planner=Planner(model=team.planner.model, prompts=Prompts())
    )
    assert config_hash(prompts) == KNOWN


KNOWN = "4b489a9f9127a900aa4c006b283b32f0"  # what main (before the parts) hashed it to
