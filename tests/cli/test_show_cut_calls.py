"""``regiment show`` lists a tool call that started and never finished (cut mid-body)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from regiment import Planner, ScriptedModel, Team, Worker, text_response, tool
from regiment.hierarchy import ToolCallStarted
from regiment.models import ModelRequest, ModelResponse, ToolCallPart

from .helpers import run_cli

pytestmark = pytest.mark.anyio


def _brain(request: ModelRequest) -> ModelResponse:
    if request.role in ("planner", "replanner"):
        return text_response(json.dumps({"steps": [{"description": "charge order 7"}]}))
    if request.role != "worker" or len(request.messages) > 1:
        return text_response("done")
    call = ToolCallPart(id="c1", name="charge", arguments={"order": "7"})
    return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")


async def test_show_lists_a_call_cut_mid_body_as_started_and_never_finished(
    tmp_path: Path,
) -> None:
    # An async tool's body charged, then the run was cancelled while it still ran. The
    # journal held the call's intent and no result, but `show` did not list the call at
    # all (nor its --json): nothing a person read said a charge may have been made.
    charged = anyio.Event()

    @tool
    async def charge(order: str) -> str:
        """Charges the order's card."""
        charged.set()  # the side effect, before the cut
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    model = ScriptedModel(_brain)
    worker = Worker(name="till", description="charges", model=model, tools=[charge])
    team = Team(name="shop", planner=Planner(model=model), workers=[worker])
    path = str(tmp_path / "runs.db")
    async with team.start(journal=path) as running:
        with anyio.CancelScope() as scope:
            async with running.stream("charge order 7") as events:
                async for event in events:
                    if isinstance(event, ToolCallStarted):
                        await charged.wait()
                        run_id = event.run_id
                        scope.cancel()
    code, out, err = await run_cli("show", run_id, "--journal", path)
    assert code == 0, err
    assert out.splitlines()[3:5] == [
        "  v1 s1 [cancelled] cancelled by the planner: the run is ending",
        '    call charge({"order": "7"}) [cut short: started, never finished; what it did '
        "before the cut is not recorded; ended 'cut', from the run's closing report]",
    ]
    code, out, err = await run_cli("show", run_id, "--json", "--journal", path)
    assert code == 0, err
    (step,) = json.loads(out)["steps"]
    assert step["unfinished_calls"] == [
        {
            "call_index": 0,
            "tool": "charge",
            "call_id": "c1",
            "arguments": {"order": "7"},
            "idempotency_key": f"{run_id}/v1/s1/0",
            "outcome": "cut",  # as the run's closing event's report of s1 says
            "ended_by": "closing_report",
        }
    ]
