"""A pending approval names the idempotency key its call runs with (issue #9).

The durable team's ``charge`` tool declares no key: in a run its body gets the one the
run derives (run, plan version, step, call). The request a human decides on names that
same key, in the run's result, the journal, ``regiment approvals --json`` and the
service's ``GET /approvals`` (which lists the journal's ``pending_approvals``), for the
plain team and for the same team nested as a worker of another.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regiment.journal import nested_run_id, open_journal
from tests.cli.helpers import run_cli

from .durable_team import GOAL, Ledger, make_office, make_team
from .test_crash_resume import where

pytestmark = pytest.mark.anyio

__all__ = ("where",)  # the fixture, shared


@pytest.mark.parametrize("nested", [False, True], ids=["plain", "nested"])
async def test_a_pending_request_names_the_key_its_call_runs_with(
    where: str, tmp_path: Path, nested: bool
) -> None:
    ledger = Ledger(tmp_path)
    team = make_office(ledger=ledger, approve="bolt") if nested else make_team(approve="bolt")
    async with team.start(journal=where) as running:
        paused = await running.run(GOAL + " via the desk" if nested else GOAL, deps=ledger)
        live = await running.pending_approvals()
    assert paused.status == "paused", paused
    run_id = paused.run_id
    calls_run = nested_run_id(run_id, 1, "t1") if nested else run_id
    key = f"{calls_run}/v1/s2/0"  # the key ``charge`` gets in ``ctx.idempotency_key``
    (request,) = paused.pending_approvals
    assert request.idempotency_key == key
    assert [r.idempotency_key for r in live] == [key]
    journal = await open_journal(where)
    try:
        (record,) = await journal.pending_approvals(run_id)
    finally:
        await journal.close()
    assert record.request.idempotency_key == key
    code, out, err = await run_cli("approvals", "--json", "--journal", where)
    assert code == 0, err
    assert [json.loads(line)["idempotency_key"] for line in out.splitlines()] == [key]
