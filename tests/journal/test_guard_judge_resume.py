"""A guard's judge calls (``judge``) are journaled like the run's other model replies:
a run resumed after a crash replays the reply a judge had before it, instead of asking
its model (and paying for the call) again; a question not asked before the crash goes
to the model. The replayed reply still counts in the resumed run's usage. On SQLite and
PostgreSQL: the crash is a copy of what the journal had committed (``snapshot``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from regiment import Planner, ScriptedModel, Team, Worker
from regiment.hierarchy import RunCompleted, RunningTeam, RunStarted
from regiment.hierarchy.guard import AnswerSubject, Outcome, Pass, RequestSubject, Trip, judge
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import ModelCallFinished, open_journal
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    Usage,
)
from regiment.tools import tool

from .snapshot import crash_sites, snapshot
from .test_guard_resume_calls import refund_brain

pytestmark = pytest.mark.anyio

GOAL = "refund order 7"
JUDGED = Usage(input_tokens=7000, output_tokens=3)  # a judge's call, easy to tell apart


@dataclass
class Judge:
    """An LLM-as-judge whose model notes the questions it is asked."""

    asked: list[str] = field(default_factory=list)
    crash: Callable[[], Awaitable[None]] | None = None  # after its reply, once

    def reply(self, request: ModelRequest) -> ModelResponse:
        self.asked.append(request.messages[-1].text)
        return ModelResponse(
            parts=(TextPart(text="ok"),), stop_reason="end_turn", usage=JUDGED, model="judge"
        )

    async def verdict(self, question: str) -> Outcome:
        asked = ModelRequest(messages=(Message.user(question),))
        reply = await judge(ScriptedModel(self.reply), asked)
        if self.crash is not None:
            crash, self.crash = self.crash, None
            await crash()
        return Pass() if reply.text == "ok" else Trip(reply.text)


def team_of(judge_: Judge, crash: Callable[[], Awaitable[None]] | None = None) -> Team:
    """A worker whose requests a judge reads, and whose refund tool may crash the run."""

    @tool
    async def issue_refund(order_id: int) -> str:
        """Refund an order."""
        if crash is not None:
            await crash()
        return f"refunded {order_id}"

    async def request_judge(subject: RequestSubject) -> Outcome:
        return await judge_.verdict(f"may I send: {subject.messages[-1].text[:40]}")

    async def answer_judge(subject: AnswerSubject) -> Outcome:
        return await judge_.verdict(f"may I answer: {subject.text}")

    model = ScriptedModel(refund_brain)
    worker = Worker(
        name="billing",
        description="refunds",
        model=model,
        tools=[issue_refund],
        guardrails=[request_judge],
    )
    planner = Planner(model=model, synthesizer_guardrails=[answer_judge])
    return Team(name="t", planner=planner, workers=[worker])


@pytest.fixture(params=["sqlite", "postgres"])
def sites(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """The run's journal, and where what a crash leaves of it goes."""
    return crash_sites(str(request.param), tmp_path, request)


def keeper(live: str, copy: str, reached: anyio.Event) -> Callable[[], Awaitable[None]]:
    """What a kill -9 here would leave of the journal, copied to ``copy``; then hang."""

    async def crash() -> None:
        await anyio.to_thread.run_sync(snapshot, live, copy)
        reached.set()
        await anyio.Event().wait()  # until the run is cancelled

    return crash


async def resumed(copy: str, run_id: str, team: Team) -> RunCompleted:
    """The run resumed from ``copy`` by another owner, once the crashed one's lease ran out."""
    journal = await open_journal(copy, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        async with team.start(journal=journal) as running, running.resume_stream(run_id) as s:
            events = [event async for event in s]
    finally:
        await journal.close()
    last = events[-1]
    assert isinstance(last, RunCompleted), last
    return last


async def crashed(live: str, team: Team, reached: anyio.Event) -> str:
    run_ids: list[str] = []

    async def go(running: RunningTeam) -> None:
        async with running.stream(GOAL) as stream:
            async for event in stream:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    async with team.start(journal=live) as running, anyio.create_task_group() as tg:
        tg.start_soon(go, running)
        await reached.wait()
        tg.cancel_scope.cancel()
    return run_ids[0]


async def test_a_steps_judge_asked_before_the_crash_is_replayed_not_asked_again(
    sites: tuple[str, str],
) -> None:
    (live, copy), reached = sites, anyio.Event()
    before = Judge()
    run_id = await crashed(live, team_of(before, keeper(live, copy, reached)), reached)
    (first,) = before.asked  # the step's first request: its answer is the tool call
    assert first.startswith("may I send: Goal of the run: refund order 7")

    after = Judge()
    done = await resumed(copy, run_id, team_of(after))
    assert done.result.status == "completed"
    # the first request's judge is replayed; the step's second request and the answer
    # were never judged before the crash: their judges ask the model
    assert after.asked == ["may I send: ", "may I answer: refunded"]
    # the replayed reply counts in the run's usage as it did before the crash
    assert done.result.usage.input_tokens >= 3 * JUDGED.input_tokens


async def test_an_answer_judge_asked_before_the_crash_is_replayed_not_asked_again(
    sites: tuple[str, str],
) -> None:
    (live, copy), reached = sites, anyio.Event()
    before = Judge()
    original = before.verdict

    async def verdict(question: str) -> Outcome:  # the crash: in the answer's judge
        if question.startswith("may I answer"):
            before.crash = keeper(live, copy, reached)
        return await original(question)

    before.verdict = verdict  # type: ignore[method-assign]
    run_id = await crashed(live, team_of(before), reached)
    assert before.asked[-1] == "may I answer: refunded"
    assert len(before.asked) == 3

    after = Judge()
    done = await resumed(copy, run_id, team_of(after))
    assert done.result.answer == "refunded"
    assert after.asked == []  # every judge question was answered before the crash
    journal = await open_journal(copy)
    try:
        keys = [
            e.record.call_key
            for e in await journal.read(run_id)
            if isinstance(e.record, ModelCallFinished)
        ]
    finally:
        await journal.close()
    assert sum(k.startswith("run/guard/") for k in keys) == 1
    assert sum(k.startswith("step/1/s1/a1/guard/") for k in keys) == 2
