"""The idempotency keys a step's tool calls are given (issue #22, row 3's call log): a
call whose tool declares a key gets that key (``tool:name=value``); any other call that
is journaled or reads its context gets ``{run}/v{version}/{step}/{n}``, ``n`` the call's
number in its step (from 0, in reply order, a reply's calls one after another). A step
that skips its call log while its calls need no key must number them the same: the keys
below are written out from that rule, not read back from the code, and asked of a run
with no journal (no log until a call needs one), with deps (a log from the start), with
a journal (every call's intent journaled with its key), paused for an approval and
resumed, and resumed after a crash (the call in flight runs again under its key; the
calls after it are numbered on)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import anyio
import msgspec
import pytest

from regiment import Planner, RunContext, ScriptedModel, Team, Worker, tool
from regiment.hierarchy import RunStarted
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import SqliteJournal, ToolCallStarted
from regiment.models import ModelRequest, ModelResponse, ToolResultPart, tool_call_response
from regiment.tools import Approve

pytestmark = pytest.mark.anyio

_PLAN = json.dumps({"steps": [{"id": "s1", "description": "work"}]})


def _reply(done: int) -> ModelResponse | str:
    """The worker's reply once ``done`` tool results came back: calls 0..7, then text."""
    match done:
        case 0 | 1 | 6:
            return tool_call_response("ping", {}, call_id=f"c{done}")
        case 2 | 7:
            return tool_call_response("whose", {}, call_id=f"c{done}")
        case 3:  # two at once: numbers 3 and 4
            first = tool_call_response("ping", {}, call_id="c3")
            second = tool_call_response("whose", {}, call_id="c4")
            return msgspec.structs.replace(first, parts=first.parts + second.parts)
        case 5:
            return tool_call_response("refund", {"order_id": "o7"}, call_id="c5")
        case _:
            return "done"


def _done(request: ModelRequest) -> int:
    return sum(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)


class _Keys:
    """The tools, each context reading one noting the key it was given."""

    def __init__(self, hold_at: int | None = None, *, asks: bool = False) -> None:
        self.seen: list[tuple[str, str]] = []
        self.hold_at = hold_at  # whose's call with this key number waits there for ever
        self.asks = asks  # refund needs approval: a journaled run pauses there
        self.held = anyio.Event()

    def team(self) -> Team:
        seen = self.seen

        @tool
        async def ping() -> str:
            """Say pong."""
            return "pong"

        @tool
        async def whose(ctx: RunContext[object]) -> str:
            """Say whose call this is."""
            seen.append(("whose", ctx.idempotency_key))
            if self.hold_at is not None and ctx.idempotency_key.endswith(f"/{self.hold_at}"):
                self.held.set()
                await anyio.sleep_forever()
            return "yours"

        @tool(idempotency_key=("order_id",), requires_approval=self.asks)
        async def refund(order_id: str, ctx: RunContext[object]) -> str:
            """Refund an order."""
            seen.append(("refund", ctx.idempotency_key))
            return f"refunded {order_id}"

        async def brain(request: ModelRequest) -> ModelResponse | str:
            if request.role == "planner":
                return _PLAN
            return _reply(_done(request)) if request.role == "worker" else "answer"

        model = ScriptedModel(brain)
        worker = Worker(name="w", description="works", model=model, tools=[ping, whose, refund])
        return Team(name="keys", planner=Planner(model=model), workers=[worker])


def _expected(run_id: str) -> list[tuple[str, str]]:
    return [
        ("whose", f"{run_id}/v1/s1/2"),
        ("whose", f"{run_id}/v1/s1/4"),
        ("refund", "refund:order_id=o7"),
        ("whose", f"{run_id}/v1/s1/7"),
    ]


def _journaled(run_id: str) -> dict[int, tuple[str, str]]:
    """Every call's intent: its tool and key, by its number."""
    names = ["ping", "ping", "whose", "ping", "whose", "refund", "ping", "whose"]
    keys = {n: f"{run_id}/v1/s1/{n}" for n in range(8)} | {5: "refund:order_id=o7"}
    return {n: (names[n], keys[n]) for n in range(8)}


async def _intents(path: Path, run_id: str) -> dict[int, tuple[str, str]]:
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(run_id)]
    finally:
        await journal.close()
    return {
        r.call_index: (r.tool, r.idempotency_key)
        for r in records
        if isinstance(r, ToolCallStarted) and r.step_id == "s1"
    }


@pytest.mark.parametrize("deps", [None, "db"])
async def test_a_run_with_no_journal_keys_its_calls_by_their_number(deps: str | None) -> None:
    keys = _Keys()
    async with keys.team().start() as running:
        for _ in range(2):  # the second on a warmed team
            keys.seen.clear()
            result = await running.run("go", deps=deps)
            assert result.status == "completed"
            assert result.tool_calls == 8
            assert keys.seen == _expected(result.run_id)


async def test_a_journaled_run_keys_and_journals_every_call_by_its_number(tmp_path: Path) -> None:
    keys, path = _Keys(), tmp_path / "runs.db"
    async with keys.team().start(journal=path) as running:
        result = await running.run("go")
    assert result.status == "completed"
    assert keys.seen == _expected(result.run_id)
    assert await _intents(path, result.run_id) == _journaled(result.run_id)


async def test_a_resumed_run_gives_the_call_in_flight_its_key_and_numbers_on(
    tmp_path: Path,
) -> None:
    keys, live, copy = _Keys(hold_at=4), tmp_path / "live.db", tmp_path / "crashed.db"
    run_ids: list[str] = []

    async def run() -> None:
        async with running.stream("go") as events:
            async for event in events:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    async with keys.team().start(journal=live) as running, anyio.create_task_group() as tg:
        tg.start_soon(run)
        await keys.held.wait()  # call 4's intent is journaled, durably: a crash now
        with sqlite3.connect(live) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        source.close()
        target.close()
        tg.cancel_scope.cancel()
    run_id = run_ids[0]
    assert keys.seen == _expected(run_id)[:2]
    crashed = {n: k for n, k in _journaled(run_id).items() if n <= 4}
    assert await _intents(copy, run_id) == crashed
    resumed = _Keys()
    journal = await SqliteJournal.open(copy, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with resumed.team().start(journal=journal) as running:
            result = await running.resume(run_id)
    finally:
        await journal.close()
    assert result.status == "completed"
    assert resumed.seen == _expected(run_id)[1:]  # call 2 replayed; 4 again, same key
    assert await _intents(copy, run_id) == _journaled(run_id)


async def test_a_run_paused_for_an_approval_keys_its_calls_the_same_once_resumed(
    tmp_path: Path,
) -> None:
    keys, path = _Keys(asks=True), tmp_path / "runs.db"
    async with keys.team().start(journal=path) as running:
        paused = await running.run("go")
        assert paused.status == "paused"
        (request,) = paused.pending_approvals
        assert request.idempotency_key == "refund:order_id=o7"
        assert keys.seen == _expected(paused.run_id)[:2]
        await running.approve(request.request_id, Approve(), by="ana")
        result = await running.resume(paused.run_id)
    assert result.status == "completed"
    assert keys.seen == _expected(paused.run_id)
    assert await _intents(path, paused.run_id) == _journaled(paused.run_id)
