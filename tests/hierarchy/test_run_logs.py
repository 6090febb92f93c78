"""What a run logs under ``regiment.run``: a model asked again, a stale report
dropped, a budget exhausted; each record carries the run's context in ``extra``."""

from __future__ import annotations

import logging

import anyio
import pytest

from regiment.errors import ModelConnectionError
from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    Critic,
    Planner,
    Replanned,
    RunResult,
    StaleReportDropped,
    StepReport,
    Team,
    Worker,
)
from regiment.models import ModelRequest, ScriptedModel, ToolResultPart

from .brains import Brain, plan_json
from .replan_team import PROBE, RECOVER, probe_after_slow, replan_team
from .test_rounds import CriticBrain

pytestmark = pytest.mark.anyio


def _run_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "regiment.run"]


def _context(record: logging.LogRecord) -> tuple[object, object, object]:
    return record.__dict__["run_id"], record.__dict__["step_id"], record.__dict__["worker"]


async def _run(team: Team, goal: str = "goal") -> RunResult:
    async with team.start() as running:
        return await running.run(goal)


async def test_an_invalid_plan_asked_again_is_logged_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = plan_json({"description": "x", "worker": "nobody"})
    brain = Brain([bad, plan_json({"description": "do it"})])
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="does things", model=model)
    team = Team(name="t", planner=Planner(model=model, name="boss"), workers=[worker])
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(team)
    assert result.status == "completed"
    (retry,) = _run_records(caplog)
    assert retry.levelno == logging.INFO
    assert retry.getMessage() == (
        "boss's plan reply could not be used, asking again: attempt 1 of 3: step s1 is "
        "assigned to worker 'nobody', which does not exist; the workers are: w"
    )
    assert _context(retry) == (result.run_id, None, "boss")


async def test_a_plan_reply_asked_again_is_not_quoted_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The line quoted the reply: '{"steps": [{"description": "refund ann@example.com'.
    # The model's reply may quote the goal or a tool's result; the model and PlanError
    # still get the quote, the log line its length. A name the reply gave stays.
    cut = '{"steps": [{"description": "refund ann@example.com'
    named = plan_json({"description": "x", "id": "s1", "depends_on": ["ann@example.com"]})
    brain = Brain([cut, named, plan_json({"description": "do it"})])
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="does things", model=model)
    team = Team(name="t", planner=Planner(model=model, name="boss"), workers=[worker])
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(team)
    assert result.status == "completed"
    said = [r.getMessage() for r in _run_records(caplog)]
    assert len(said) == 2
    assert all("ann@example.com" not in line for line in said)
    assert "truncated): <50 characters>; reply with one complete JSON object" in said[0]
    assert "<15 characters>" in said[1]


async def test_a_budget_that_runs_out_is_logged_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(Brain([plan_json({"description": "a"}, {"description": "b"})]))
    worker = Worker(name="w", description="does things", model=model)
    team = Team(
        name="t", planner=Planner(model=model), workers=[worker], budget=Budget(model_calls=1)
    )
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(team)
    assert result.status == "partial"
    (event,) = [e for e in result.events if isinstance(e, BudgetExhausted)]
    (record,) = [r for r in _run_records(caplog) if r.levelno == logging.WARNING]
    assert record.getMessage() == f"budget exhausted (model_calls): {event.detail}"
    assert _context(record) == (result.run_id, None, None)


def _never_ok(report: StepReport) -> bool:
    return False


async def test_a_stale_report_dropped_is_logged_with_its_step_and_worker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    replanned, late_report_seen = anyio.Event(), anyio.Event()

    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "slow draft":
            with anyio.CancelScope(shield=True):  # a call already on the wire finishes
                await replanned.wait()
            return "late"
        if description == "recover":
            await late_report_seen.wait()
        return f"did: {description}"

    brain = Brain(
        [plan_json(PROBE, {"id": "s2", "description": "slow draft"}), RECOVER],
        work=probe_after_slow(work),
    )
    team = replan_team(brain, worker="drafter")
    with caplog.at_level(logging.INFO, logger="regiment"):
        async with team.start() as running, running.stream("goal") as stream:
            async for event in stream:
                if isinstance(event, Replanned):
                    replanned.set()
                if isinstance(event, StaleReportDropped):
                    late_report_seen.set()
                    run_id = event.run_id
    (record,) = [r for r in _run_records(caplog) if "dropped" in r.getMessage()]
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        "drafter: report of step s2 from plan version 1 dropped: the plan is at version 2"
    )
    assert _context(record) == (run_id, "s2", "drafter")


async def test_a_critic_asked_again_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    brain = CriticBrain([plan_json({"description": "x"})], ["looks fine to me", "yes, fine"])
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="does things", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], critic=Critic())
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(team)
    retry, taken = _run_records(caplog)
    assert retry.levelno == logging.INFO
    assert retry.getMessage() == (
        "critic's critique reply could not be used, asking again: "
        "attempt 1 of 2: the verdict did not parse"
    )
    assert _context(retry) == (result.run_id, None, "critic")
    # the second did not parse either: the round is passed unjudged, which is a WARNING
    assert taken.levelno == logging.WARNING
    assert taken.getMessage().startswith("the critic's reply did not parse after 2 attempts")


async def test_a_replan_cut_to_max_steps_says_so_in_its_plan_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The replan's tail is cut as a first plan is: Plan.truncated_from records it.
    tail = plan_json(*({"description": f"part {i}", "depends_on": ["s1"]} for i in range(12)))
    team = replan_team(Brain([plan_json(PROBE), tail]))
    with caplog.at_level(logging.WARNING, logger="regiment"):
        result = await _run(team)
    first, second = result.plans
    assert first.truncated_from is None
    assert second.truncated_from == 12
    assert len(second.steps) == 1 + 10  # the kept probe, then Planner.max_steps new steps
    (cut,) = [r for r in _run_records(caplog) if "Planner.max_steps" in r.getMessage()]
    assert cut.getMessage().startswith("the planner's replan had 12 steps")


async def test_a_plan_cut_to_max_steps_is_logged_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Steps past Planner.max_steps never run: the run must not drop them silently.
    brain = Brain([plan_json(*({"description": f"part {i}"} for i in range(1, 6)))])
    model = ScriptedModel(brain)
    worker = Worker(name="w", description="does things", model=model)
    team = Team(name="t", planner=Planner(model=model, max_steps=3), workers=[worker])
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(team)
    assert result.committed == ("s1", "s2", "s3")
    assert result.plans[0].truncated_from == 5
    (cut,) = _run_records(caplog)
    assert cut.levelno == logging.WARNING
    assert cut.getMessage() == (
        "the planner's plan had 5 steps; only the first 3 (Planner.max_steps) are kept, "
        "the other 2 will not run (raise max_steps, or ask for fewer steps)"
    )
    assert _context(cut) == (result.run_id, None, None)


async def test_a_failed_step_a_replan_recovers_from_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Nothing logged it: a step whose model (or approver, or Prompts hook) raised was
    # only a StepErrored event, so a service's log never showed what went wrong.
    async def work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
        if description == "flaky":
            raise ModelConnectionError("the pricing service hung up")
        return f"did: {description}"

    plans = [plan_json({"description": "flaky"}), plan_json({"description": "steady"})]
    model = ScriptedModel(Brain(plans, work=work))
    worker = Worker(name="w", description="does things", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    with caplog.at_level(logging.INFO, logger="regiment"):
        result = await _run(team)
    assert result.status == "completed"
    (failed,) = [r for r in _run_records(caplog) if r.levelno >= logging.WARNING]
    assert failed.getMessage() == (
        "w s1: step ended failed: ModelConnectionError: the pricing service hung up"
    )
    assert _context(failed) == (result.run_id, "s1", "w")
