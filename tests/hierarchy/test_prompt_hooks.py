"""A ``Prompts`` hook that raises as a run or a team starts says which hook of which class
raised, and what: the run fails with a ``RunError`` (journaled as failed), the team's
start with a ``ConfigError`` naming the worker. (They said "ActorFailed: actor 'run-…'
failed to start: ValueError(...)" and "actor 't/w' failed to start: KeyError(...)".)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from regiment.errors import ConfigError, RunError, StepFailed
from regiment.hierarchy import (
    Check,
    Compression,
    Critic,
    Planner,
    Prompts,
    RunFailed,
    Team,
    Worker,
)
from regiment.journal import open_journal
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, text_response

from .brains import Brain, plan_json

pytestmark = pytest.mark.anyio

FIX = "fix that method (it must return the text), or remove it to use regiment's default"


class _NoPlannerTemplate(Prompts):
    def planner_system(
        self,
        *,
        team: str,
        workers: Mapping[str, tuple[str, Sequence[str]]],
        checks: Mapping[str, str],
        max_steps: int,
    ) -> str:
        raise ValueError("no template file")


class _NoWorkerTone(Prompts):
    def worker_system(self, *, worker: str, description: str, system_prompt: str) -> str:
        raise KeyError("tone")


def _team(prompts: Prompts) -> Team:
    model = ScriptedModel(Brain([plan_json({"description": "x"})]))
    worker = Worker(name="w", description="works", model=model)
    return Team(name="t", planner=Planner(model=model, prompts=prompts), workers=[worker])


async def test_a_raising_planner_system_fails_the_run_naming_the_hook(tmp_path: Path) -> None:
    where = tmp_path / "runs.db"
    async with _team(_NoPlannerTemplate()).start(journal=where) as running:
        with pytest.raises(RunError) as caught:
            await running.run("goal")
        with pytest.raises(RunError, match=r"_NoPlannerTemplate\.planner_system raised"):
            async with running.stream("goal") as events:
                [event async for event in events]
    assert str(caught.value) == (
        "the Prompts hook _NoPlannerTemplate.planner_system raised ValueError: "
        f"no template file; {FIX}"
    )
    assert isinstance(caught.value.__cause__, ValueError)
    journal = await open_journal(where)
    try:
        assert {info.status for info in await journal.list_runs()} == {"failed"}
    finally:
        await journal.close()


async def test_a_raising_worker_system_fails_the_start_naming_the_worker() -> None:
    with pytest.raises(ConfigError) as caught:
        async with _team(_NoWorkerTone()).start():
            pass
    assert str(caught.value) == (
        "worker 'w' cannot start: the Prompts hook _NoWorkerTone.worker_system raised "
        f"KeyError: 'tone'; {FIX}"
    )
    assert isinstance(caught.value.__cause__, KeyError)


# Mid-run: each hook a run calls after it began. They failed the run as "the run's
# planner failed while handling StepReport: KeyError: 'tone'" (no hook named), and a
# raising step_request failed every step and replan alike with "KeyError: 'tone'".
_AT_WORK = (
    "plan_problems",
    "replan_request",
    "round_request",
    "critic_system",
    "critique_request",
    "critique_retry",
    "compressor_system",
    "compress_request",
    "synthesizer_system",
    "synthesis_request",
)


def _raises(self: Prompts, *args: object, **kwargs: object) -> str:
    raise KeyError("tone")


def _returns_none(self: Prompts, *args: object, **kwargs: object) -> None:
    return None


def _raises_in(hook: str, broken: Callable[..., object] = _raises) -> Prompts:
    return type("Toneless", (Prompts,), {hook: broken})()  # type: ignore[no-any-return]


def _every_phase(request: ModelRequest) -> str | ModelResponse:
    """A run that reaches every hook: an invalid plan, a failed check and its replan, an
    unparsable verdict, a second round, compression before each critique."""
    text = "\n".join(m.text for m in request.messages)
    if request.role in ("planner", "replanner"):
        if "That plan cannot be run" in text:
            return plan_json({"description": "first", "check": "ok"})
        if text.startswith("REPLAN"):
            return plan_json({"description": "second"})
        if text.startswith("ROUND"):
            return plan_json({"description": "third"})
        return plan_json({"description": "first", "worker": "nobody"})
    if request.role == "worker":
        return text_response("BAD" if "): first" in text else "fine")
    if request.role == "critic":
        if len(request.messages) == 1 and "Round 1 " in text:
            return text_response("not a verdict")
        passed = "Round 1 " not in text
        return text_response(json.dumps({"passed": passed, "feedback": "more"}))
    if request.role == "compressor":
        return text_response("memory")
    return text_response("the answer")


def _phases_team(prompts: Prompts) -> Team:
    model = ScriptedModel(_every_phase)
    good = Check(description="no BAD", predicate=lambda report: "BAD" not in report.output)
    return Team(
        name="t",
        planner=Planner(model=model, prompts=prompts),
        workers=[Worker(name="w", description="works", model=model)],
        checks={"ok": good},
        critic=Critic(),
        compression=Compression(threshold_tokens=1),
    )


async def test_every_phase_reaches_every_hook() -> None:
    # The scenario the next test relies on: with the default prompts, it completes.
    result = await _phases_team(Prompts()).run("goal")
    assert result.status == "completed"
    assert [p.version for p in result.plans] == [1, 2, 3]
    assert len(result.verdicts) == 2


@pytest.mark.parametrize("hook", _AT_WORK)
async def test_a_hook_raising_mid_run_fails_the_run_naming_it(hook: str) -> None:
    async with _phases_team(_raises_in(hook)).start() as running:
        for goal in ("first", "second"):  # the started team serves the next run
            with pytest.raises(RunError) as caught:
                await running.run(goal)
            assert type(caught.value) is RunError
            assert str(caught.value) == (
                f"the Prompts hook Toneless.{hook} raised KeyError: 'tone'; {FIX}"
            )
            assert isinstance(caught.value.__cause__, KeyError)
            assert caught.value.failed is not None
        async with running.stream("third") as events:
            ending = [event async for event in events][-1]
    assert isinstance(ending, RunFailed)
    assert ending.message == f"the Prompts hook Toneless.{hook} raised KeyError: 'tone'; {FIX}"


async def test_a_raising_step_request_fails_its_step_naming_it_without_replans() -> None:
    brain = Brain([plan_json({"description": "x"})] * 2)
    team = Team(
        name="t",
        planner=Planner(model=ScriptedModel(brain), prompts=_raises_in("step_request")),
        workers=[Worker(name="w", description="works", model=ScriptedModel(brain))],
    )
    async with team.start() as running:
        for goal in ("first", "second"):
            with pytest.raises(StepFailed) as caught:
                await running.run(goal)
            assert caught.value.fatal
            assert caught.value.cause == (
                "step s1 (x) ended failed: the Prompts hook Toneless.step_request raised "
                f"KeyError: 'tone'; {FIX}"
            )
    assert len(brain.plan_requests) == 2  # one plan a run: a replan would fail alike


# A hook that returns something not a str failed far from it: "TypeError: sequence item 0:
# expected str instance, NoneType found" for step_request, "the synthesis model call
# failed: TypeError: object of type 'int' has no len()" for synthesis_request.
NOT_TEXT = "returned the NoneType None, not the text (a str)"


@pytest.mark.parametrize("hook", ["planner_system", "replan_request", "synthesis_request"])
async def test_a_hook_that_returns_no_text_fails_the_run_naming_it(hook: str) -> None:
    async with _phases_team(_raises_in(hook, _returns_none)).start() as running:
        for goal in ("first", "second"):
            with pytest.raises(RunError) as caught:
                await running.run(goal)
            assert str(caught.value) == f"the Prompts hook Toneless.{hook} {NOT_TEXT}; {FIX}"


async def test_a_step_request_that_returns_no_text_fails_its_step_naming_it() -> None:
    model = ScriptedModel(Brain([plan_json({"description": "x"})]))
    prompts = _raises_in("step_request", _returns_none)
    worker = Worker(name="w", description="works", model=model)
    team = Team(name="t", planner=Planner(model=model, prompts=prompts), workers=[worker])
    with pytest.raises(StepFailed) as caught:
        await team.run("goal")
    assert caught.value.cause == (
        f"step s1 (x) ended failed: the Prompts hook Toneless.step_request {NOT_TEXT}; {FIX}"
    )
