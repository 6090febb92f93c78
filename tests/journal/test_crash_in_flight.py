"""A model call in flight when a run's process is killed is billed, and a resume counts it.

The provider bills a call when it gets it, whether or not its reply comes back, and the
journal kept a model call only once its reply had (``ModelCallFinished``): a run killed
with SIGKILL while a worker's call was in flight, resumed, sent that call again and went
on spending until its ``Budget(usd=...)`` was used up by its own count, that first call
left out, so the providers billed more than the budget (and more than the run said it
spent). A run under a spending budget now journals each call's intent, with the most it
may spend, durably before the call, and a resume charges each started call that has no
reply at that most.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from regiment.hierarchy import RunResult
from regiment.hierarchy._replay import Replay
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import (
    ModelCallFinished,
    ModelCallStarted,
    SqliteJournal,
    nested_run_id,
    open_journal,
)
from regiment.models import ModelResponse, TextPart, Usage

from .in_flight_team import SLOW_CALL, bill_of, make_team
from .killed_child import journal_at, killed_child
from .sql_trace import traced, transactions

pytestmark = pytest.mark.anyio

CHILD = Path(__file__).with_name("in_flight_team.py")
USD = 0.004  # six of the worker's calls: its loop ends on it


async def _killed_in_flight(
    where: str, bill: Path, slow: str, backend: str, log: Path, nested: str = "flat"
) -> str:
    """Run the team in a child until the ``slow`` role's call is in flight; SIGKILL it."""
    args = [where, str(bill), str(USD), slow, nested, backend]
    async with killed_child(CHILD, args, log, "in flight", 60) as run_id:
        return run_id


async def _resumed(
    where: str, run_id: str, bill: Path, slow: str, nested: bool = False
) -> tuple[RunResult, list[object]]:
    """The run resumed; its records (``nested``: its step s1's nested run's)."""
    journal = await open_journal(where, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with make_team(bill, USD, answers=slow, nested=nested).start(
            journal=journal
        ) as running:
            result = await running.resume(run_id)
        read = nested_run_id(run_id, 1, "s1") if nested else run_id
        return result, [e.record for e in await journal.read(read)]
    finally:
        await journal.close()


# The role left in flight, its calls' role in the bill, the call's key and who is charged,
# and how the resumed run ends.
CASES = {
    "worker": (["worker"] * SLOW_CALL, f"step/1/s1/{SLOW_CALL}", "w", ("partial", "usd")),
    "synthesizer": (
        ["worker"] * SLOW_CALL + ["synthesizer"],
        "synthesis/1",
        "synthesizer",
        ("completed", None),
    ),
}


@pytest.mark.parametrize(
    ("anyio_backend", "kind", "slow"),
    [
        ("asyncio", "sqlite", "worker"),
        ("trio", "sqlite", "worker"),
        ("asyncio", "postgres", "worker"),
        ("trio", "postgres", "worker"),
        ("asyncio", "sqlite", "synthesizer"),
        ("trio", "postgres", "synthesizer"),
    ],
)
async def test_a_call_in_flight_at_a_crash_is_counted_and_the_budget_holds(
    anyio_backend: str,
    kind: str,
    slow: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls, key, role, end = CASES[slow]
    where, bill = journal_at(kind, tmp_path, request), tmp_path / "bill.txt"
    run_id = await _killed_in_flight(where, bill, slow, anyio_backend, tmp_path / "child.log")
    lines = bill.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["planner", *calls]
    lost = int(lines[-1].split()[1])  # what the call in flight was billed
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        resumed, records = await _resumed(where, run_id, bill, slow)
    billed = bill_of(bill)
    assert (resumed.status, resumed.budget_exhausted) == end
    # What the providers billed never passes the budget, and the run counts all of it.
    assert billed <= USD * 1e6, (billed, resumed.usage.micro_usd)
    assert resumed.usage.micro_usd >= billed, (billed, resumed.usage.micro_usd)
    # The call in flight is charged at the most it could have spent, to its role; the
    # resume sent it again (its intent journaled again), and that one was answered.
    starts = [r for r in records if isinstance(r, ModelCallStarted) and r.call_key == key]
    assert [s.role for s in starts] == [role, role]
    assert lost <= starts[0].most.micro_usd
    finished = [r for r in records if isinstance(r, ModelCallFinished) and r.call_key == key]
    assert len(finished) == 1
    assert resumed.usage_by_role[role].micro_usd >= starts[0].most.micro_usd
    assert f"run {run_id}: 1 model call was in flight" in caplog.text
    assert f"{key} by '{role}'" in caplog.text


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("usd", [None, USD])
async def test_only_a_run_whose_budget_limits_money_or_tokens_journals_intents(
    usd: float | None, tmp_path: Path
) -> None:
    """An intent for every model call sent (each answered: none is charged again), and
    none at all where nothing limits what the calls spend (no write a call more)."""
    journal = await open_journal(str(tmp_path / "runs.db"))
    try:
        team = make_team(tmp_path / "bill.txt", usd, answers="synthesizer")
        async with team.start(journal=journal) as running:
            result = await running.run("take notes")
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    assert result.status == "completed"
    starts = [r.call_key for r in records if isinstance(r, ModelCallStarted)]
    replies = [r.call_key for r in records if isinstance(r, ModelCallFinished)]
    assert len(replies) == result.model_calls == 5  # the plan, three worker calls, synthesis
    assert starts == (replies if usd is not None else [])


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_each_intent_reaches_the_disk_before_its_call(tmp_path: Path) -> None:
    """An intent's commit is fsynced (SQLite's FULL), as a tool call's is: the provider
    bills the call even if the machine goes down, and the journal must know of it. The
    calls are made one at a time here: each intent is a commit of its own."""
    journal = await SqliteJournal.open(tmp_path / "runs.db")
    statements = traced(journal)
    try:
        team = make_team(tmp_path / "bill.txt", USD, answers="synthesizer")
        async with team.start(journal=journal) as running:
            result = await running.run("take notes")
    finally:
        await journal.close()
    assert result.status == "completed"
    committed = transactions(statements, "normal")
    holding = [t for t in committed if "model_call_started" in t.kinds]
    assert len(holding) == result.model_calls == 5  # one commit each, before its call
    assert {t.level for t in holding} == {"full"}


def test_a_call_resumed_twice_counts_the_start_that_got_no_answer() -> None:
    """A call's key comes round again after each resume: a reply answers the latest start
    before it, and an earlier start of the key that was sent again got none."""

    def start(key: str, micro: int) -> ModelCallStarted:
        return ModelCallStarted(run_id="r", call_key=key, role="w", most=Usage(micro_usd=micro))

    reply = ModelResponse(parts=(TextPart(text="ok"),), stop_reason="end_turn", model="m")
    finish = ModelCallFinished(run_id="r", call_key="step/1/s1/3", response=reply)
    replay = Replay()
    for record in (
        start("plan/1", 1),
        ModelCallFinished(run_id="r", call_key="plan/1", response=reply),
    ):
        replay._add(record)
    for record in (
        start("step/1/s1/3", 900),
        start("step/1/s1/3", 500),
        finish,
        start("step/1/s1/4", 70),
    ):
        replay._add(record)
    assert [(s.call_key, s.most.micro_usd) for s in replay.unanswered()] == [
        ("step/1/s1/3", 900),
        ("step/1/s1/4", 70),
    ]


@pytest.mark.parametrize(("anyio_backend", "kind"), [("asyncio", "sqlite"), ("trio", "postgres")])
async def test_a_nested_runs_call_in_flight_is_counted_against_the_run_above(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """The budget is the run above's; the nested team (a ``TeamWorker``) has none of its
    own, and its step's share holds it: its worker's call in flight is journaled in the
    nested run, charged there as it resumes, and reported up with the step."""
    where, bill = journal_at(kind, tmp_path, request), tmp_path / "bill.txt"
    log = tmp_path / "child.log"
    run_id = await _killed_in_flight(where, bill, "worker", "asyncio", log, "nested")
    lines = bill.read_text().splitlines()
    assert [line.split()[0] for line in lines] == [
        "planner",
        "planner",
        "worker",
        "worker",
        "worker",
    ]
    lost = int(lines[-1].split()[1])
    with caplog.at_level(logging.WARNING, logger="regiment.run"):
        resumed, records = await _resumed(where, run_id, bill, "worker", nested=True)
    billed = bill_of(bill)
    assert resumed.budget_exhausted == "usd"
    assert billed <= USD * 1e6, (billed, resumed.usage.micro_usd)
    assert resumed.usage.micro_usd >= billed, (billed, resumed.usage.micro_usd)
    key = f"step/1/s1/{SLOW_CALL}"
    starts = [r for r in records if isinstance(r, ModelCallStarted) and r.call_key == key]
    assert lost <= starts[0].most.micro_usd
    inner = nested_run_id(run_id, 1, "s1")
    assert f"run {inner}: 1 model call was in flight" in caplog.text
