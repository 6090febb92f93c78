"""A journaled run with guardrails: a judge's reply is charged, and journaled under a
judge's own key, never as one of the planner's calls (a resume would replay it as the
plan), and a
resumed run shows the guardrail events an uninterrupted run shows. On SQLite and
PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from regiment import Planner, ScriptedModel, Team, Worker
from regiment.hierarchy import (
    Event,
    GuardrailRewrote,
    GuardrailTripped,
    PlanSubject,
    RequestSubject,
    Rewrite,
    RunCompleted,
    RunningTeam,
    RunStarted,
)
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, Trip, judge
from regiment.hierarchy.run._journaling import LEASE_TTL
from regiment.journal import ModelCallFinished, open_journal
from regiment.models import Message, ModelRequest, ModelResponse, text_response

from .snapshot import crash_sites, snapshot

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgres"])
def sites(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A journal, and where what a crash leaves of it goes."""
    return crash_sites(str(request.param), tmp_path, request)


PLAN = json.dumps({"steps": [{"id": "s1", "description": "look"}]})


async def brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        return PLAN
    return "looked" if request.role == "worker" else "answer"


async def test_a_planner_judges_reply_is_not_journaled_as_a_planner_call(
    sites: tuple[str, str],
) -> None:
    verdicts = ScriptedModel(lambda request: text_response("ok"))

    async def reply_judge(subject: ReplySubject) -> Outcome:
        reply = await judge(verdicts, ModelRequest(messages=(Message.user("judge"),)))
        return Pass() if reply.text == "ok" else Trip(reply.text)

    model = ScriptedModel(brain)
    team = Team(
        name="judged",
        planner=Planner(model=model, guardrails=[reply_judge]),
        workers=[Worker(name="w", description="looks", model=model)],
    )
    path = sites[0]
    async with team.start(journal=path) as running:
        result = await running.run("look once")
    assert result.model_calls == 4  # the plan, its judge, the step, the synthesis
    journal = await open_journal(path)
    try:
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    replies = {r.call_key: r.response.text for r in records if isinstance(r, ModelCallFinished)}
    assert replies["plan/1"] == PLAN
    assert "plan/2" not in replies
    (judged,) = [key for key, text in replies.items() if text == "ok"]
    assert judged.startswith("run/guard/")


# -- a resumed run shows the guards' events of an uninterrupted one ---------------------

BAD = json.dumps({"steps": [{"id": "s1", "description": "issue refund"}]})
GOOD = json.dumps(
    {
        "steps": [
            {"id": "s1", "description": "check eligibility"},
            {"id": "s2", "description": "issue refund", "depends_on": ["s1"]},
        ]
    }
)


def refund_needs_a_check(subject: PlanSubject) -> Outcome:
    first = subject.steps[0].description if subject.steps else ""
    return Trip("check eligibility first") if first == "issue refund" else Pass()


def sign(subject: RequestSubject) -> Outcome:
    head, *rest = subject.messages
    signed = Message.user(head.text + " (signed)")
    return Rewrite(dataclasses.replace(subject, messages=(signed, *rest)))


GOAL = "refund order 7"


def guarded_team(crash: Callable[[], Awaitable[None]] | None, asked: list[str | None]) -> Team:
    """The refund team; ``asked`` gets the step of each worker model call."""

    async def think(request: ModelRequest) -> ModelResponse | str:
        told = " ".join(m.text for m in request.messages)
        if request.role == "planner":
            return GOOD if "check eligibility first" in told else BAD
        if request.role == "worker":
            asked.append(request.step_id)
            if request.step_id == "s2" and crash is not None:
                await crash()
            return "done: " + told[:20]
        return "answer"

    model = ScriptedModel(think)
    return Team(
        name="guarded",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="refunds", model=model, guardrails=[sign])],
        guardrails=[refund_needs_a_check],
    )


def guard_events(events: list[Event]) -> list[tuple[str, str, str, str | None]]:
    return [
        (type(e).__name__, e.guardrail, e.subject, e.step_id)
        for e in events
        if isinstance(e, GuardrailTripped | GuardrailRewrote)
    ]


async def test_a_resumed_run_shows_the_guard_events_of_an_uninterrupted_one(
    tmp_path: Path, sites: tuple[str, str]
) -> None:
    team = guarded_team(None, [])
    async with team.start(journal=tmp_path / "whole.db") as running, running.stream(GOAL) as stream:
        whole = [event async for event in stream]
    expected = guard_events(whole)
    assert expected == [
        ("GuardrailTripped", "refund_needs_a_check", "plan", None),
        ("GuardrailRewrote", "sign", "model_request", "s1"),
        ("GuardrailRewrote", "sign", "model_request", "s2"),
    ]

    live, copy = sites
    reached, run_ids = anyio.Event(), []
    asked: list[str | None] = []

    async def crash() -> None:  # in s2's model call: keep what a kill -9 would leave
        await anyio.to_thread.run_sync(snapshot, live, copy)
        reached.set()
        await anyio.Event().wait()  # until the run is cancelled

    async def go(running: RunningTeam) -> None:
        async with running.stream(GOAL) as stream:
            async for event in stream:
                if isinstance(event, RunStarted):
                    run_ids.append(event.run_id)

    async with (
        guarded_team(crash, []).start(journal=live) as running,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(go, running)
        await reached.wait()
        tg.cancel_scope.cancel()

    journal = await open_journal(copy, clock=lambda: time.time() + LEASE_TTL + 1)
    try:
        team = guarded_team(None, asked)
        async with team.start(journal=journal) as running, running.resume_stream(run_ids[0]) as s:
            resumed = [event async for event in s]
    finally:
        await journal.close()
    last = resumed[-1]
    assert isinstance(last, RunCompleted)
    assert asked.count("s2") == 1  # the kill came in s2's call; the resume finished it
    assert guard_events(resumed) == expected
