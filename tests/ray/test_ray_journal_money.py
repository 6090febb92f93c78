"""A Ray-placed worker in a run with both a journal (SQLite) and a money budget: each
of the replica's model calls has its intent (``ModelCallStarted``, the most it may
spend) journaled in the team's process before the call is sent, and its response
after, under the same keys as in-process; the run's money is what the journal's
responses cost. Killed mid-step and resumed, the run spends what an uninterrupted one
does: the committed calls are charged from the journal, not made again."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from types import ModuleType

import psutil
import pytest

from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import Journal, ModelCallFinished, ModelCallStarted, open_journal
from regiment.models import Usage

from ._wire_team import GOAL, paid, payer_team
from .test_ray_replay import OUTPUT, _killed_mid_step

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes

USD = 0.05  # far more than the run spends: no limit is reached


def _cost(usage: Usage) -> int:
    return usage.whole_input_tokens + 2 * usage.output_tokens  # at _wire_team.WHOLE


async def _replica_calls(journal: Journal, run_id: str) -> list[tuple[str, str]]:
    """The step's model call records, in order: (kind, call key)."""
    records = [e.record for e in await journal.read(run_id)]
    return [
        (type(r).__name__, r.call_key)
        for r in records
        if isinstance(r, ModelCallStarted | ModelCallFinished) and r.call_key.startswith("step/")
    ]


async def test_a_replicas_model_calls_are_journaled_with_their_intents_and_paid_for(
    ray_session: ModuleType, probe: tuple[str, object], tmp_path: Path
) -> None:
    name, _ = probe
    namespace = ray_session.get_runtime_context().namespace
    ledger = str(tmp_path / "ledger.jsonl")
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        team = payer_team(ledger, name, namespace, block=False, usd=USD, num_cpus=0)
        async with team.start(journal=journal) as running:
            result = await running.run(GOAL)
        calls = await _replica_calls(journal, result.run_id)
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert result.steps[0].output == OUTPUT
    keys = [f"step/1/s1/{n}" for n in (1, 2, 3)]
    assert calls == [
        (kind, key) for key in keys for kind in ("ModelCallStarted", "ModelCallFinished")
    ]  # each intent durable before its call went out from the replica
    intents = [r for r in records if isinstance(r, ModelCallStarted)]
    assert {r.role for r in intents if r.call_key in keys} == {"payer"}
    assert all((r.most.micro_usd or 0) > 0 for r in intents)
    responses = [r.response.usage for r in records if isinstance(r, ModelCallFinished)]
    assert result.usage.micro_usd == sum(_cost(u) for u in responses) > 0
    (step,) = result.steps
    assert step.usage.micro_usd == result.usage_by_role["payer"].micro_usd == _cost(step.usage)


async def test_a_run_with_a_money_budget_killed_mid_step_resumes_spending_as_one_run(
    ray_session: ModuleType, probe: tuple[str, object], tmp_path: Path
) -> None:
    name, _ = probe
    context = ray_session.get_runtime_context()
    namespace, address = context.namespace, context.gcs_address
    baseline = await payer_team(
        str(tmp_path / "baseline.jsonl"), name, namespace, block=False, usd=USD, num_cpus=0
    ).run(GOAL)
    assert baseline.usage.micro_usd == _cost(baseline.usage) > 0

    journal_path, ledger = tmp_path / "runs.db", str(tmp_path / "ledger.jsonl")
    run_id = await _killed_mid_step(address, namespace, journal_path, ledger, probe, usd=USD)
    (payment,) = paid(ledger)
    with contextlib.suppress(psutil.NoSuchProcess):  # its replica died with it
        psutil.Process(payment["pid"]).wait(timeout=60)
    assert payment["pid"] != os.getpid()

    journal = await open_journal(str(journal_path), clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        before = await _replica_calls(journal, run_id)
        team = payer_team(ledger, name, namespace, usd=USD, num_cpus=0)
        async with team.start(journal=journal) as running:
            result = await running.resume(run_id)
        after = await _replica_calls(journal, run_id)
    finally:
        await journal.close()
    assert before == [
        (kind, f"step/1/s1/{n}")
        for n in (1, 2)
        for kind in ("ModelCallStarted", "ModelCallFinished")
    ]  # hold (the second call's tool) was in flight: no model call was
    assert after == [
        *before,
        ("ModelCallStarted", "step/1/s1/3"),
        ("ModelCallFinished", "step/1/s1/3"),
    ]
    assert (result.status, result.budget_exhausted) == ("completed", None)
    assert result.steps[0].output == OUTPUT
    assert paid(ledger) == [payment]
    assert result.usage.micro_usd == baseline.usage.micro_usd  # nothing charged twice, or left out
    assert result.usage == baseline.usage
