"""Under any order of step completions around a replan, a report of an old plan
version is never committed, and its output never reaches a later prompt."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import (
    Check,
    Planner,
    Replanned,
    RunResult,
    StaleReportDropped,
    StepCompleted,
    StepReport,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, TextPart, ToolResultPart

from .brains import Brain, all_blocked, plan_json, step_of
from .versions import announced_violations

STEPS = ("probe", "left", "right")


def _fails(report: StepReport) -> bool:
    return "probe" not in report.output


async def _run(order: tuple[str, ...], backend: str) -> tuple[RunResult, Brain]:
    gates = {name: anyio.Event() for name in STEPS}

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if description in gates:
            # A model call already on the wire: it finishes even if the step is cancelled.
            with anyio.CancelScope(shield=True):
                await gates[description].wait()
        return f"OUT[{description}]"

    v1 = plan_json(
        *({"id": f"s{i}", "description": n} for i, n in enumerate(STEPS, 1)),
    )
    v1 = v1.replace('"description": "probe"}', '"description": "probe", "check": "bad"}')
    brain = Brain([v1, plan_json({"description": "recover", "depends_on": ["s1"]})], work=work)
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
        checks={"bad": Check(description="probe must not say probe", predicate=_fails)},
    )
    result: list[RunResult] = []
    async with team.start() as running, anyio.create_task_group() as tg:

        async def one() -> None:
            result.append(await running.run("goal"))

        tg.start_soon(one)
        for name in order:
            await all_blocked(backend)
            gates[name].set()
    return result[0], brain


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25, deadline=None)
@given(order=st.permutations(STEPS))
def test_old_version_reports_are_never_applied(backend: str, order: list[str]) -> None:
    result, brain = anyio.run(_run, tuple(order), backend, backend=backend)
    events = result.events
    assert announced_violations(events) == []
    replan_at = next(i for i, e in enumerate(events) if isinstance(e, Replanned))
    # after the replan, nothing of version 1 is committed
    late = [e for e in events[replan_at:] if isinstance(e, StepCompleted) and e.plan_version == 1]
    assert late == []
    committed_v1 = {e.step_id for e in events[:replan_at] if isinstance(e, StepCompleted)}
    dropped = {e.step_id for e in events if isinstance(e, StaleReportDropped)}
    assert not committed_v1 & dropped
    # a late report is dropped if it arrives while the run is still going; once the
    # run has finished it is a dead letter. Either way it is never committed.
    assert dropped <= {"s2", "s3"} - committed_v1
    assert set(result.committed) == {"s4"} | committed_v1
    assert result.rejected == ("s1",)  # the probe: kept as evidence, never committed
    assert result.stale_reports_dropped == len(dropped)
    # what was dropped never reached a later prompt or the answer
    for step_id in dropped:
        output = f"OUT[{STEPS[int(step_id[1:]) - 1]}]"
        later = [r for r in brain.worker_requests if step_of(r)[1] == "recover"]
        assert all(output not in _text(r) for r in later)
        assert output not in result.answer
    assert result.committed[-1] == "s4"
