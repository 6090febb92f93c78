"""A journaled run with guardrails: a judge's reply is charged but never journaled
as one of the planner's calls (a resume would replay it as the plan)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regiment import Planner, ScriptedModel, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, Trip, judge
from regiment.journal import ModelCallFinished, SqliteJournal
from regiment.models import Message, ModelRequest, ModelResponse, text_response

pytestmark = pytest.mark.anyio

PLAN = json.dumps({"steps": [{"id": "s1", "description": "look"}]})


async def brain(request: ModelRequest) -> ModelResponse | str:
    if request.role == "planner":
        return PLAN
    return "looked" if request.role == "worker" else "answer"


async def test_a_planner_judges_reply_is_not_journaled_as_a_planner_call(tmp_path: Path) -> None:
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
    path = tmp_path / "runs.db"
    async with team.start(journal=path) as running:
        result = await running.run("look once")
    assert result.model_calls == 4  # the plan, its judge, the step, the synthesis
    journal = await SqliteJournal.open(path)
    try:
        records = [e.record for e in await journal.read(result.run_id)]
    finally:
        await journal.close()
    replies = {r.call_key: r.response.text for r in records if isinstance(r, ModelCallFinished)}
    assert replies["plan/1"] == PLAN
    assert "plan/2" not in replies
    assert "ok" not in replies.values()
