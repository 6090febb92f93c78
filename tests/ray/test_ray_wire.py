"""What a Ray-placed worker gets from the caller over the step channel, as an
in-process one does: the run's deps, live events on the run's stream, its model
usage charged when its step is cancelled, and the team's approval gate."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.errors import ConfigError, StepFailed
from regiment.hierarchy import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    RunCompleted,
    RunResult,
    StepCompleted,
    Team,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    Worker,
)
from regiment.models import ScriptedModel
from regiment.tools import ApprovalDecision, Approve, Deny

from ._ray_team import DropWaitingPlanner, Probe, holder_team, plan_text, ray_refund_team
from ._wire_team import Stamp, paid, refunder_team, refused_team, stamper_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def test_the_runs_deps_reach_the_replicas_tools(ray_session: ModuleType) -> None:
    async with stamper_team().start() as running:
        result = await running.run("stamp", deps=Stamp("blue"))
    colour, _, pid = result.steps[0].output.partition(" stamp by ")
    assert colour == "blue"
    assert int(pid) != os.getpid()  # read by the tool on the replica


async def test_deps_that_do_not_pickle_are_refused_at_run(ray_session: ModuleType) -> None:
    async with stamper_team().start() as running:
        with pytest.raises(ConfigError, match=r"cannot be pickled for worker 'stamper' on Ray"):
            await running.run("stamp", deps=threading.Lock())
        assert running.active_runs == 0  # refused before it started


async def test_a_replicas_step_whose_model_refuses_for_good_fails_the_run_at_once(
    ray_session: ModuleType,
) -> None:
    async with refused_team().start() as running:
        with pytest.raises(StepFailed, match="set GATEWAY_KEY; the run ends without a replan"):
            await running.run("look it up")


def _live(events: list[Event]) -> list[tuple[object, ...]]:
    """The live events as a reader sees them: kind, worker, step, tool, outcome, text."""
    return [
        (
            type(e).__name__,
            e.worker,
            e.step_id,
            getattr(e, "tool", None),
            getattr(e, "outcome", None),
            getattr(e, "text", None),
        )
        for e in events
        if isinstance(e, TextDelta | ToolCallStarted | ToolCallFinished) and e.worker
    ]


async def _streamed(team: Team) -> list[Event]:
    async with team.start() as running, running.stream(GOAL) as events:
        return [event async for event in events]


async def test_a_replicas_live_events_stream_like_an_in_process_workers(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    local = _live(await _streamed(build_team(ScriptedModel(refund_brain), Ledger())))
    remote = _live(await _streamed(ray_refund_team(str(tmp_path / "l.jsonl"), num_cpus=0)))
    kinds = {kind for kind, *_ in local}
    assert kinds == {"TextDelta", "ToolCallStarted", "ToolCallFinished"}
    assert sorted(remote, key=repr) == sorted(local, key=repr)  # steps may interleave


def _with_probe(ray: ModuleType, name: str) -> object:
    return ray.remote(Probe).options(name=name).remote()


async def _replanned(team: Team, planner: DropWaitingPlanner) -> RunResult:
    closing = (await planner.run(team, "hold order 88213"))[-1]
    assert isinstance(closing, RunCompleted)
    return closing.result


async def test_a_cancelled_remote_steps_model_usage_is_charged_as_in_process(
    ray_session: ModuleType, request: pytest.FixtureRequest
) -> None:
    v1 = plan_text(
        {"id": "s1", "description": "Probe order 88213", "worker": "local", "check": "fails"},
        {"id": "s2", "description": "Hold order 88213", "worker": "holder"},
    )
    v2 = plan_text({"id": "s3", "description": "Recover order 88213", "worker": "local"})
    results: dict[str, RunResult] = {}
    for where in ("local", "ray"):
        name = f"probe-{os.getpid()}-{request.node.name}-{where}"
        probe = _with_probe(ray_session, name)
        try:
            planner = DropWaitingPlanner(v1, v2)
            team = holder_team(name, planner, num_cpus=0)
            if where == "local":
                holder, local = team.workers
                assert isinstance(holder, Worker)
                in_process = dataclasses.replace(holder, placement=None)
                team = dataclasses.replace(team, workers=[in_process, local])
            results[where] = await _replanned(team, planner)
        finally:
            ray_session.kill(probe)
    local_run, remote_run = results["local"], results["ray"]
    assert remote_run.stale_reports_dropped == local_run.stale_reports_dropped == 1
    # plan, s1, s2's one call (then cancelled by the replan), replan, s3, synthesis
    assert remote_run.model_calls == local_run.model_calls == 6
    # The replan request lists the tool calls of the steps it cut: an in-process step's
    # (it joined its run's fence at its first call), not yet a Ray replica's (a gap the
    # README names): the planner's prompt is longer in process. All else is charged alike.
    local_roles, remote_roles = dict(local_run.usage_by_role), dict(remote_run.usage_by_role)
    local_planner, remote_planner = local_roles.pop("planner"), remote_roles.pop("planner")
    assert remote_roles == local_roles
    assert remote_planner.output_tokens == local_planner.output_tokens
    listed = local_planner.input_tokens - remote_planner.input_tokens
    assert listed > 0
    assert remote_run.usage.input_tokens + listed == local_run.usage.input_tokens
    assert remote_run.usage.output_tokens == local_run.usage.output_tokens


async def _approving(
    tmp_path: Path, decision: ApprovalDecision
) -> tuple[RunResult, list[ApprovalRequested], list[dict[str, object]]]:
    ledger = str(tmp_path / "refunds.jsonl")
    release = anyio.Event()
    team = refunder_team(ledger, release)
    asked: list[ApprovalRequested] = []
    async with team.start() as running, running.stream("refund 88213") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                asked.append(event)
                await running.approve(event.request.request_id, decision, by="ana")
            elif isinstance(event, ApprovalResolved):
                release.set()
            elif isinstance(event, RunCompleted):
                return event.result, asked, paid(ledger)
    raise AssertionError("the run did not complete")


async def test_a_replicas_call_needing_approval_waits_for_the_teams_decision(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    result, asked, refunds = await _approving(tmp_path, Approve())
    (event,) = asked
    request = event.request
    assert (request.worker, request.step_id, request.call_index) == ("refunding/refunder", "s1", 0)
    assert (request.tool_name, request.arguments) == ("refund", {"order_id": "88213", "amount": 40})
    assert request.idempotency_key == "refund:order_id=88213"
    assert result.status == "completed"
    outputs = {s.step_id: s.output for s in result.steps}
    assert outputs["s1"] == "billing: refunded 40 on 88213"
    (refund,) = refunds  # the body ran once, on the replica, after the approval
    assert refund["pid"] != os.getpid()


async def test_a_denied_call_on_a_replica_never_runs_its_body(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    result, asked, refunds = await _approving(tmp_path, Deny(reason="over the limit"))
    assert len(asked) == 1
    assert result.status == "completed"
    outputs = {s.step_id: s.output for s in result.steps}
    assert outputs["s1"] == "billing: denied: over the limit"
    assert refunds == []


async def test_a_replicas_call_needing_approval_pauses_the_run_when_nothing_else_goes_on(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "refunds.jsonl")
    team = refunder_team(ledger, anyio.Event())
    refunder, _slow = team.workers
    plan = plan_text({"id": "s1", "description": "refund 88213", "worker": "refunder"})
    planner = dataclasses.replace(team.planner, model=ScriptedModel([plan]))
    single = dataclasses.replace(team, workers=[refunder], planner=planner)
    async with single.start() as running:
        result = await running.run("refund 88213")
        assert result.status == "paused"
        (request,) = result.pending_approvals
        assert (request.worker, request.tool_name) == ("refunding/refunder", "refund")
    assert paid(ledger) == []


async def test_a_replicas_approved_call_runs_to_its_end_before_the_run_pauses(
    probe: tuple[str, object], tmp_path: Path
) -> None:
    """s1's two refunds (on a replica) wait; the first is approved and its body runs
    there while s2 ends: the run must not pause then (cutting the refund halfway), only
    once that body is done, as with an in-process worker; the second stays pending."""
    name, handle = probe
    ledger = str(tmp_path / "refunds.jsonl")
    release = anyio.Event()
    asked: list[ApprovalRequested] = []
    team = refunder_team(ledger, release, name)
    async with team.start() as running, running.stream("refund 88213 and 88214") as events:
        async for event in events:
            if isinstance(event, ApprovalRequested):
                asked.append(event)
                if len(asked) == 2:
                    await running.approve(asked[0].request.request_id, Approve())
                    await handle.wait_started.remote(1)  # type: ignore[attr-defined]
                    release.set()  # s2 ends while the approved body runs
            elif isinstance(event, StepCompleted) and event.step_id == "s2":
                await anyio.wait_all_tasks_blocked()  # a pause now would cut the body
                await handle.release.remote()  # type: ignore[attr-defined]
            elif isinstance(event, RunCompleted):
                result = event.result
    assert result.status == "paused"
    order = asked[0].request.arguments["order_id"]
    lines = [{k: v for k, v in line.items() if k != "pid"} for line in paid(ledger)]
    assert lines == [{"started": order}, {"refund": order, "amount": 40}]  # run once, to its end
    pending = [r.request_id for r in result.pending_approvals]
    assert pending == [asked[1].request.request_id]
