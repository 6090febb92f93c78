"""The refund story with its workers on Ray: the same answer and events as in-process,
its side effects made by the replicas' processes, not the planner's."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from types import ModuleType

import psutil
import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.errors import ConfigError
from regiment.hierarchy import Budget, Event, Ray, RunResult, Worker
from regiment.models import ScriptedModel

from ._ray_team import ledger_lines, ray_refund_team

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


def _story(result: RunResult) -> list[tuple[object, ...]]:
    """The events as the user reads them: kind, step, version, status (no ids, no times)."""

    def one(event: Event) -> tuple[object, ...]:
        return (
            type(event).__name__,
            getattr(event, "step_id", None),
            getattr(event, "plan_version", None),
            getattr(event, "status", None),
        )

    return [one(e) for e in result.events]


async def test_refund_story_on_ray_matches_in_process(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    local = await build_team(ScriptedModel(refund_brain), Ledger()).run(GOAL)
    ledger = str(tmp_path / "ledger.jsonl")
    remote = await ray_refund_team(ledger, replicas=1, num_cpus=0.5).run(GOAL)

    assert remote.status == local.status == "completed"
    assert remote.answer == local.answer
    assert remote.committed == local.committed == ("s4", "s5")
    assert remote.rejected == local.rejected == ("s1",)
    assert [p.version for p in remote.plans] == [1, 2]
    assert _story(remote) == _story(local)
    assert remote.model_calls == local.model_calls
    assert remote.tool_calls == local.tool_calls
    assert remote.usage_by_role == local.usage_by_role
    effects = ledger_lines(ledger)
    assert [(e["kind"], e["item"] if e["kind"] != "email" else "…") for e in effects] == [
        ("exception", "88213"),
        ("email", "…"),
    ]  # no refund: the replan held on Ray too
    assert all(e["pid"] != os.getpid() for e in effects)
    assert all(e["node"] == ray_session.get_runtime_context().get_node_id() for e in effects)
    # The team's exit ended its replicas' processes (waited for, not slept on).
    for pid in {e["pid"] for e in effects}:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).wait(timeout=30)
        assert not psutil.pid_exists(pid)


async def test_a_tight_budget_ends_the_story_on_ray_as_in_process(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    """Each step's share is reserved before it is sent and the replica keeps to it,
    so a budget runs out at the same point, with the same events, as in-process."""
    model_calls = 6  # plan, s1 (2 calls), replan: s4 gets a share of 1 and stops there
    budget = Budget(model_calls=model_calls)
    local_team = dataclasses.replace(
        build_team(ScriptedModel(refund_brain), Ledger()), budget=budget
    )
    local = await local_team.run(GOAL)
    remote_team = ray_refund_team(str(tmp_path / "ledger.jsonl"), num_cpus=0)
    remote = await dataclasses.replace(remote_team, budget=budget).run(GOAL)
    assert local.status == "partial"
    assert remote.status == local.status
    assert _story(remote) == _story(local)
    assert remote.model_calls == local.model_calls <= model_calls
    steps = [(s.step_id, s.status, s.model_calls) for s in remote.steps]
    assert steps == [(s.step_id, s.status, s.model_calls) for s in local.steps]
    assert steps == [("s1", "done", 2), ("s4", "budget_exhausted", 1)]  # the replica kept to it


async def test_a_worker_that_cannot_be_pickled_is_a_config_error(ray_session: ModuleType) -> None:
    def brain_in_a_closure(request: object) -> str:
        return "never called"

    team = build_team(ScriptedModel(refund_brain), Ledger())
    billing = team.workers[0]
    assert isinstance(billing, Worker)
    unpicklable = dataclasses.replace(
        billing,
        model=ScriptedModel(brain_in_a_closure),
        placement=Ray(),
    )
    # A lock makes the model unpicklable, as a real SDK client's connection pool does.
    object.__setattr__(unpicklable.model, "_lock_for_test", __import__("threading").Lock())
    broken = dataclasses.replace(team, workers=[unpicklable, *team.workers[1:]])
    with pytest.raises(ConfigError, match=r"worker 'billing' is placed on Ray.*Ray\(build="):
        async with broken.start():
            pass


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_under_trio_a_ray_worker_is_a_config_error(tmp_path: Path) -> None:
    team = ray_refund_team(str(tmp_path / "ledger.jsonl"))
    with pytest.raises(ConfigError, match="Ray runs only under asyncio"):
        async with team.start():
            pass


async def test_replicas_no_node_can_place_fail_the_start_after_start_timeout(
    ray_session: ModuleType, tmp_path: Path
) -> None:
    """Ray keeps an actor it cannot place pending, with no error: the start gives up
    after ``start_timeout``, says what the replicas asked for, and kills them."""
    ledger = str(tmp_path / "ledger.jsonl")
    absent = {"regiment_test_absent": 1.0}  # a resource no node of this Ray has
    unplaceable = ray_refund_team(ledger, num_cpus=0, resources=absent, start_timeout=1.5)
    with pytest.raises(ConfigError) as raised:
        async with unplaceable.start():
            pass
    message = str(raised.value)
    assert "worker 'billing'" in message
    assert "did not start within 1.5 s" in message
    assert "resources={'regiment_test_absent': 1.0}" in message
    # Killed, not left pending: Ray's actor table (its GCS, no dashboard needed)
    # holds no replica still waiting to be placed.
    from ray._private.state import actors

    waiting = actors(actor_state_name="PENDING_CREATION")
    assert [a for a in waiting.values() if a["ActorClassName"].endswith("StepHost")] == []
    # The same team with a placement Ray can satisfy still starts in this session.
    async with ray_refund_team(ledger, num_cpus=0).start():
        pass


async def test_a_build_the_replicas_cannot_import_fails_the_start_with_its_own_words(
    ray_session: ModuleType,
) -> None:
    """Ray's text for a replica whose build raised is the whole remote traceback in
    terminal colours; the start's error carries the build's own line instead."""
    team = build_team(ScriptedModel(refund_brain), Ledger())
    billing = team.workers[0]
    assert isinstance(billing, Worker)
    placed = dataclasses.replace(
        billing, placement=Ray(build="examples.refund.tools:no_such_worker", num_cpus=0)
    )
    broken = dataclasses.replace(team, workers=[placed, *team.workers[1:]])
    with pytest.raises(ConfigError) as raised:
        async with broken.start():
            pass
    assert str(raised.value) == (
        "worker 'billing': its Ray replicas did not start: "
        "Ray(build='examples.refund.tools:no_such_worker') cannot be imported on the Ray node "
        "(module 'examples.refund.tools' has no attribute 'no_such_worker'); "
        "make the module importable there (installed, or on PYTHONPATH)"
    )


def test_start_timeout_must_be_positive() -> None:
    with pytest.raises(ConfigError, match=r"Ray\(start_timeout=0\).*more than 0"):
        Ray(start_timeout=0)
