"""Guardrails and model settings on Ray replicas: the team's and the worker's guards
run around the replica's calls, and its model calls carry the team's settings under
the worker's, exactly as in-process; the guard events reach the caller's stream."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType

import pytest

from regiment.config import load_team
from regiment.errors import ConfigError, StepFailed
from regiment.hierarchy import (
    Event,
    GuardrailRewrote,
    GuardrailTripped,
    RunCompleted,
    RunFailed,
    RunResult,
    Team,
    ToolCallFinished,
    ToolCallStarted,
)

from ._ray_guarded import CAP_LOCKED, OnTrip, guarded_team
from ._ray_team import ledger_lines

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


async def _run(team: Team, goal: str) -> tuple[RunResult | RunFailed, list[Event]]:
    async with team.start() as running, running.stream(goal) as events:
        seen = [event async for event in events]
    last = seen[-1]
    assert isinstance(last, RunCompleted | RunFailed)
    return (last.result if isinstance(last, RunCompleted) else last), seen


# Live progress: streamed as it happens, so its order among the step's events is not
# fixed (a replica's comes over the wire); compared on its own (``_calls``).
_LIVE = {"TextDelta", "ToolCallStarted", "ToolCallFinished"}


def _calls(seen: list[Event]) -> list[tuple[object, ...]]:
    """The tool-call events, with what they say (not the model's call ids, nor times)."""
    return [
        (type(e).__name__, e.worker, e.step_id, e.tool, e.arguments, getattr(e, "outcome", None))
        for e in seen
        if isinstance(e, ToolCallStarted | ToolCallFinished)
    ]


def _story(seen: list[Event]) -> list[tuple[object, ...]]:
    """The events as the user reads them, guard events with what they say (no ids, times,
    nor the live progress a replica does not stream)."""
    return [
        (
            type(e).__name__,
            getattr(e, "step_id", None),
            getattr(e, "status", None),
            getattr(e, "guardrail", None),
            getattr(e, "subject", None),
            getattr(e, "reason", None),
            getattr(e, "worker", None),
        )
        for e in seen
        if type(e).__name__ not in _LIVE
    ]


async def test_a_rewrite_and_the_settings_apply_on_the_replica_as_in_process(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    here, there = str(tmp_path / "local.jsonl"), str(tmp_path / "ray.jsonl")
    local, local_seen = await _run(guarded_team(here), "refund order 7")
    remote, remote_seen = await _run(guarded_team(there, num_cpus=0), "refund order 7")
    assert isinstance(local, RunResult)
    assert isinstance(remote, RunResult)
    assert remote.status == local.status == "completed"
    assert [s.output for s in remote.steps] == [s.output for s in local.steps]
    (step,) = remote.steps
    said, _, settings = step.output.partition(" settings=")
    assert (
        said == "tool said: refunded 100 of order 7 (error=False)"
    )  # the rewrite reached the tool
    # the team's max_tokens, the worker's own temperature and top_p over the team's
    assert json.loads(settings) == {
        "extra": {},
        "max_tokens": 500,
        "stop_sequences": None,
        "temperature": 0.9,
        "thinking_budget": None,
        "timeout": None,
        "top_p": 0.5,
    }
    assert _story(remote_seen) == _story(local_seen)
    rewrote = [e for e in remote_seen if isinstance(e, GuardrailRewrote)]
    assert [(e.guardrail, e.subject, e.worker, e.step_id) for e in rewrote] == [
        ("cap_amount", "tool_call", "billing", "s1")
    ]
    (refund,) = ledger_lines(there)
    assert (refund["order_id"], refund["amount"]) == (7, 100)
    assert refund["pid"] != os.getpid()  # the replica's process ran the tool
    assert [(r["order_id"], r["amount"]) for r in ledger_lines(here)] == [(7, 100)]


@pytest.mark.parametrize("on_trip", ["tell_model", "fail_step"])
async def test_a_tool_guard_that_trips_on_the_replica_acts_as_in_process(
    ray_session: ModuleType, tmp_path: Path, on_trip: OnTrip
) -> None:
    here, there = str(tmp_path / "local.jsonl"), str(tmp_path / "ray.jsonl")
    local, local_seen = await _run(guarded_team(here, on_trip), "refund order 13")
    remote, remote_seen = await _run(guarded_team(there, on_trip, num_cpus=0), "refund order 13")
    assert _story(remote_seen) == _story(local_seen)
    # the refused call is told as in-process: started, then finished as the guard's
    outcome = "guardrail" if on_trip == "tell_model" else "GuardrailError"
    # as the guard that tripped judged it: the team's cap had rewritten the model's 500
    judged = {"order_id": 13, "amount": 100}
    assert _calls(remote_seen) == _calls(local_seen)
    assert _calls(remote_seen) == [
        ("ToolCallStarted", "billing", "s1", "issue_refund", judged, None),
        ("ToolCallFinished", "billing", "s1", "issue_refund", judged, outcome),
    ]
    trips = [e for e in remote_seen if isinstance(e, GuardrailTripped)]
    assert [(e.guardrail, e.subject, e.reason, e.worker) for e in trips] == [
        ("blocked_orders", "tool_call", "order 13 is under investigation", "billing")
    ]
    assert ledger_lines(there) == ledger_lines(here) == []  # the tool never ran
    if on_trip == "tell_model":
        assert isinstance(local, RunResult)
        assert isinstance(remote, RunResult)
        (step,) = remote.steps
        assert step.output.startswith(
            "tool said: not run: guardrail 'blocked_orders' refused this call: "
            "order 13 is under investigation (error=True)"
        )
        assert [s.output for s in remote.steps] == [s.output for s in local.steps]
    else:
        assert isinstance(local, RunFailed)
        assert isinstance(remote, RunFailed)
        assert remote.error_type == local.error_type == StepFailed.__name__
        assert remote.message == local.message
        assert "guardrail 'blocked_orders' tripped on the tool call" in remote.message


TEAM_FILE = """
name = "guarded"
model = "scripted"
brain = "tests.ray._ray_guarded:guarded_brain"
guardrails = ["tests.ray._ray_guarded:CAP_LOCKED"]

[[workers]]
name = "billing"
description = "Issues refunds."
tools = ["tests.ray._ray_guarded:issue_refund"]

[workers.placement]
kind = "ray"
num_cpus = 0
"""


async def test_a_team_files_guards_reach_the_replica_by_import_path(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "team.toml"
    path.write_text(TEAM_FILE)
    team = load_team(path)
    assert team.guardrails == (CAP_LOCKED,)
    assert CAP_LOCKED.source == ""  # imported, the team's copy knows its path; this one not
    result, seen = await _run(team, "refund order 7")
    assert isinstance(result, RunResult)
    (step,) = result.steps
    said = step.output.partition(" settings=")[0]
    assert said.startswith("tool said: refunded 100 of order 7 in process ")
    assert not said.endswith(f"in process {os.getpid()} (error=False)")
    rewrote = [e for e in seen if isinstance(e, GuardrailRewrote)]
    assert [(e.guardrail, e.worker) for e in rewrote] == [("cap_amount_locked", "billing")]


async def test_a_guard_in_code_that_does_not_pickle_is_a_config_error_at_start(
    tmp_path: Path,
) -> None:
    team = guarded_team(str(tmp_path / "l.jsonl"), team_guards=(CAP_LOCKED,), num_cpus=0)
    with pytest.raises(
        ConfigError,
        match=r"worker 'billing' is placed on Ray, but its guardrail 'cap_amount_locked' "
        r"cannot be pickled .*name it in a team file",
    ):
        async with team.start():
            pass
