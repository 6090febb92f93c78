"""Token limits at width: many steps in flight at once cannot together spend past the
run's ``output_tokens`` (or ``tokens``), because each call's ``max_tokens`` is held to
what its step's share (or, for the planner side's calls, the run) has left."""

from __future__ import annotations

import json
import logging

import pytest

from regiment.hierarchy import Budget, Planner, RunResult, Team, TeamWorker, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ScriptedModel,
    TextPart,
    Usage,
    effective_settings,
    estimate_tokens,
)

pytestmark = pytest.mark.anyio

WANT = 300  # what each worker would write, if its max_tokens let it


class Wide:
    """A model for every role that honours ``max_tokens`` as a real one does: a worker
    writes ``WANT`` tokens or is cut at its limit; the input is what the run estimated."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.max_tokens: list[tuple[str, int]] = []  # (role, max_tokens) of each call

    def __call__(self, request: ModelRequest) -> ModelResponse:
        limit = effective_settings(None, request).max_tokens or request.max_tokens
        self.max_tokens.append((str(request.role), limit))
        if request.role == "planner":
            steps = [{"id": f"s{i}", "description": f"part {i}"} for i in range(self.width)]
            text, wants = json.dumps({"steps": steps}), 150
        else:
            text, wants = "word " * WANT, WANT
        written = min(limit, wants)
        return ModelResponse(
            parts=(TextPart(text=text),),
            usage=Usage(input_tokens=estimate_tokens(request), output_tokens=written),
            stop_reason="end_turn" if written == wants else "max_tokens",
            model="wide",
        )


async def _run(
    width: int, budget: Budget, worker_settings: ModelSettings | None = None
) -> tuple[RunResult, Wide]:
    wide = Wide(width)
    model = ScriptedModel(wide)
    team = Team(
        name="wide",
        planner=Planner(model=model, max_steps=width),
        workers=[Worker(name="w", description="does parts", model=model, settings=worker_settings)],
        budget=budget,
        concurrency=width,
    )
    async with team.start() as running:
        return await running.run("do fifty parts"), wide


def nested_wide(model: ScriptedModel, budget: Budget) -> Team:
    """Five steps at once, each handed to a nested team that plans five of its own."""
    child = Team(
        name="inner",
        planner=Planner(model=model, max_steps=5),
        workers=[Worker(name="w", description="does parts", model=model)],
        concurrency=5,
    )
    return Team(
        name="outer",
        planner=Planner(model=model, max_steps=5),
        workers=[TeamWorker(name="inner", description="a team of parts", team=child)],
        budget=budget,
        concurrency=5,
    )


async def test_fifty_steps_at_once_spend_no_more_output_tokens_than_the_budget() -> None:
    # Before: each of the 50 steps asked for its own max_tokens (4096) on a share of
    # about 96, and the run spent 15,200 output tokens on a budget of 5,000.
    result, wide = await _run(50, Budget(output_tokens=5000))
    assert result.usage.output_tokens <= 5000
    assert (result.status, result.budget_exhausted) == ("partial", "output_tokens")
    workers = [limit for role, limit in wide.max_tokens if role == "worker"]
    assert len(workers) == 50
    assert max(workers) < WANT  # each held to its share


async def test_fifty_steps_at_once_spend_no_more_tokens_than_the_budget() -> None:
    # Before: 28,624 tokens spent on a budget of 20,000.
    result, _ = await _run(50, Budget(tokens=20_000))
    assert result.usage.total_tokens <= 20_000
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")


async def test_a_role_setting_does_not_lift_a_reply_past_its_share() -> None:
    # The role's settings win over the request's max_tokens; the budget wins over both.
    result, wide = await _run(10, Budget(output_tokens=1000), ModelSettings(max_tokens=8000))
    assert result.usage.output_tokens <= 1000
    assert all(limit <= 100 for role, limit in wide.max_tokens if role == "worker")


async def test_a_reply_the_budget_cut_short_says_so(caplog: pytest.LogCaptureFixture) -> None:
    # The cut was the budget's doing: the WARNING says so, not "raise max_tokens".
    with caplog.at_level(logging.WARNING, logger="regiment.models"):
        await _run(10, Budget(output_tokens=1000), ModelSettings(max_tokens=8000))
    cuts = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert cuts
    assert all("tokens its budget had left for it" in cut for cut in cuts)
    assert not any("raise max_tokens" in cut for cut in cuts)


async def test_a_reply_cut_at_the_roles_own_limit_still_says_raise_max_tokens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="regiment.models"):
        await _run(2, Budget(output_tokens=100_000), ModelSettings(max_tokens=WANT - 1))
    cuts = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert cuts
    assert all("raise max_tokens in this role's settings" in cut for cut in cuts)


async def test_a_roomy_budget_leaves_max_tokens_as_set() -> None:
    result, wide = await _run(5, Budget(output_tokens=100_000), ModelSettings(max_tokens=700))
    assert (result.status, result.usage.output_tokens) == ("completed", 150 + 6 * WANT)
    assert {limit for role, limit in wide.max_tokens if role == "worker"} == {700}


async def test_nested_teams_at_width_spend_no_more_than_the_run_above_allows() -> None:
    # Five steps, each handed to a nested team that plans five steps of its own: before,
    # the run spent 5,600 output tokens on a budget of 3,000 (each child run's calls
    # asked for their own max_tokens on the share its step was given).
    model = ScriptedModel(Wide(5))
    team = nested_wide(model, Budget(output_tokens=3000))
    async with team.start() as running:
        result = await running.run("do parts of parts")
    assert result.usage.output_tokens <= 3000
    assert (result.status, result.budget_exhausted) == ("partial", "output_tokens")
