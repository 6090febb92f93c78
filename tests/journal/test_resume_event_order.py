"""A resumed run does not journal again an event it replays, whatever order its steps
committed in before.

Parallel steps commit in either order, and a resume replays the committed ones in plan
order, so an event that lists step ids in commit order (``Replanned.kept``,
``SynthesisStarted.committed_steps``) came out of the replay with another order than
journaled: the journal took it for a new event and held the replan twice (``regiment
show`` and a service's event numbers read both). Here s2 commits before s1, s3 fails
its check, the replan's s4 waits for approval and the run pauses; each resume replays
the replan.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from regiment import Check, Planner, ScriptedModel, Team, Worker, tool
from regiment.hierarchy import StepCompleted, StepReport
from regiment.journal import EventRecorded, open_journal
from regiment.models import ModelRequest, ModelResponse, TextPart, ToolResultPart
from regiment.models import tool_call_response as call
from regiment.tools import Approve

pytestmark = pytest.mark.anyio

PLAN = {
    "steps": [
        {"id": "s1", "description": "charge acme"},
        {"id": "s2", "description": "charge bolt"},
        {"id": "s3", "description": "charge kilo", "depends_on": ["s1", "s2"], "check": "no"},
    ]
}
REPLAN = {"steps": [{"id": "s4", "description": "charge omni", "depends_on": ["s1", "s2"]}]}


def _team(s2_done: anyio.Event) -> Team:
    async def charge(account: str) -> str:
        """Charge an account."""
        if account == "acme":  # s1 reports only once s2 has committed
            with anyio.fail_after(10):
                await s2_done.wait()
        return f"charged {account}"

    def reply(request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            return json.dumps(PLAN if request.role == "planner" else REPLAN)
        if request.role == "synthesizer":
            return "done"
        first = request.messages[0].parts[0]
        assert isinstance(first, TextPart)
        account = first.text.split("charge ")[-1].split()[0]
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        return f"{results[0].content}" if results else call("charge", {"account": account})

    model = ScriptedModel(reply)
    charging = tool(requires_approval=lambda args: args["account"] == "omni")(charge)
    return Team(
        name="desk",
        planner=Planner(model=model),
        workers=[Worker(name="billing", description="charges", model=model, tools=[charging])],
        checks={"no": Check(description="never passes", predicate=_never)},
        concurrency=4,
    )


def _never(report: StepReport) -> bool:
    return False


async def test_a_replayed_replan_is_journaled_once(tmp_path: Path) -> None:
    where = str(tmp_path / "runs.db")
    s2_done = anyio.Event()
    async with (
        _team(s2_done).start(journal=where) as running,
        running.stream("settle") as events,
    ):
        async for event in events:
            if isinstance(event, StepCompleted) and event.step_id == "s2":
                s2_done.set()
    journal = await open_journal(where)
    try:
        (info,) = await journal.list_runs()
        assert info.status == "paused"
        run_id = info.run_id
        async with _team(s2_done).start(journal=journal) as running:
            again = await running.resume(run_id)  # paused again: nothing was decided
            assert again.status == "paused"
            (request,) = again.pending_approvals
            await running.approve(request.request_id, Approve())
            result = await running.resume(run_id)
        assert result.status == "completed"
        kinds = [
            e.record.kind for e in await journal.read(run_id) if isinstance(e.record, EventRecorded)
        ]
    finally:
        await journal.close()
    assert kinds.count("Replanned") == 1, kinds
    assert kinds.count("PlanCreated") == 2, kinds
    assert kinds.count("SynthesisStarted") == 1, kinds
