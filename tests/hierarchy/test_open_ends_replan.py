"""``OpenEnds`` on a real run whose replan planned step s1 again while v1's s1 still had
its tool call "call-0" open (a body that does not stop at once), and whose reader left
once v2's s1 had started its own "call-0": both calls get an end. Before, the two calls
shared one key (run, step id, call id), so v1's call was left with no end; and s2, whose
check failed, got a made-up ``StepCompleted`` after its ``CheckFailed``."""

from __future__ import annotations

import json

import anyio
import pytest

from regiment.hierarchy import (
    Check,
    OpenEnds,
    Planner,
    StepCompleted,
    StepErrored,
    Team,
    ToolCallFinished,
    ToolCallStarted,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolCallPart
from regiment.tools import tool

pytestmark = pytest.mark.anyio


class Charges:
    """v1's s1 (worker ``till``) charges with a body that finishes only once ``release``
    is set, shielded from the replan's cut; v2's s1 (``till2``) with one that waits on."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.v1_started = anyio.Event()

    def team(self) -> Team:
        release, v1_started = self.release, self.v1_started

        @tool
        async def charge(order: str) -> str:
            """Charges the order."""
            if order == "v1":
                v1_started.set()
                with anyio.CancelScope(shield=True):
                    await release.wait()
                return "charged"
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        model = ScriptedModel(self.brain)
        return Team(
            name="shop",
            planner=Planner(model=model),
            workers=[
                Worker(name="till", description="charges", model=model, tools=[charge]),
                Worker(name="till2", description="charges", model=model, tools=[charge]),
                Worker(name="prober", description="probes", model=model),
            ],
            checks={"no": Check(description="never passes", predicate=lambda r: False)},
        )

    async def brain(self, request: ModelRequest) -> ModelResponse | str:
        if request.role == "planner":
            steps = [
                {"id": "s1", "description": "charge", "worker": "till"},
                {"id": "s2", "description": "probe", "worker": "prober", "check": "no"},
            ]
            return json.dumps({"steps": steps})
        if request.role == "replanner":
            return json.dumps({"steps": [{"id": "s1", "description": "charge", "worker": "till2"}]})
        if request.role == "worker" and request.worker in ("till", "till2"):
            order = "v1" if request.worker == "till" else "v2"
            call = ToolCallPart(id="call-0", name="charge", arguments={"order": order})
            return ModelResponse(parts=(call,), stop_reason="tool_use", model="scripted")
        if request.role == "worker":  # the probe: once v1's charge runs; its check fails
            await self.v1_started.wait()
            return "not eligible"
        return "done"


async def test_a_left_run_s_calls_of_a_step_id_planned_again_both_end() -> None:
    charges = Charges()
    opened = OpenEnds()
    with anyio.fail_after(30):  # (a hang fails, not waits)
        async with charges.team().start() as running:
            async with running.stream("charge order 7") as events:
                async for event in events:
                    opened.see(event)
                    if isinstance(event, ToolCallStarted) and event.worker == "till2":
                        charges.release.set()  # v1's body may end: the run can wind down
                        break  # both calls are open: leaving cancels the run
            ending = events.ending
    ends = opened.ends(ending)
    calls = [(e.worker, e.step_id, e.call_id) for e in ends if isinstance(e, ToolCallFinished)]
    assert calls == [("till", "s1", "call-0"), ("till2", "s1", "call-0")]
    steps = [
        (e.plan_version, e.step_id) for e in ends if isinstance(e, (StepErrored, StepCompleted))
    ]
    assert steps == [(1, "s1"), (2, "s1")]  # none for s2: its CheckFailed ended it
