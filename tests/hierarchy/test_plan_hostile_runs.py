"""Runs driven by a hostile model: garbage plans are re-prompted with the decode
error and end in ``PlanError``; text no encoder accepts crashes nothing; events
name only plan versions that were announced."""

from __future__ import annotations

import anyio
import msgspec
import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import PlanError
from regiment.hierarchy import (
    Check,
    Event,
    Planner,
    RunFailed,
    StaleReportDropped,
    StepReport,
    Team,
    Worker,
)
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    ToolResultPart,
    tool_call_response,
)
from regiment.telemetry import SpanCollector, Telemetry
from regiment.tools import tool

from .brains import Brain, Hang, plan_json
from .versions import announced_violations

pytestmark = pytest.mark.anyio


def _team(brain: Brain, *, telemetry: Telemetry | None = None, check: bool = False) -> Team:
    model = ScriptedModel(brain)
    return Team(
        name="t",
        planner=Planner(model=model, max_plan_attempts=3),
        workers=[Worker(name="w", description="does things", model=model)],
        checks={"never": Check(description="never passes", predicate=_never)} if check else {},
        telemetry=telemetry,
    )


def _never(report: StepReport) -> bool:
    return False


def _last_user_text(request: ModelRequest) -> str:
    return "".join(p.text for p in request.messages[-1].parts if isinstance(p, TextPart))


@pytest.mark.parametrize(
    "garbage",
    [
        '{"steps": [{"description": "a"}, {"descr',
        "['a','b']",
        '{"steps": "do it"}',
        "[NaN]",
        "[" * 4000 + "]" * 4000,
        '[{"description": 5}, {"description": "b", "depends_on": [1]}]',
        "- \n- \n",
        "null",  # a JSON literal alone ran as a worker step named "null"
        "true",
        "42",
    ],
)
async def test_garbage_plans_are_reprompted_with_the_error_then_plan_error(garbage: str) -> None:
    brain = Brain([garbage] * 3)
    with pytest.raises(PlanError) as info:
        await _team(brain).run("goal")
    assert len(brain.plan_requests) == 3
    assert brain.worker_requests == []  # no garbage step ever ran
    (problem,) = info.value.problems
    assert problem in _last_user_text(brain.plan_requests[1])  # the re-prompt carried it
    assert info.value.last_reply == garbage
    # The message ends saying what the user (not the model) can do about it.
    assert str(info.value).startswith(f"the planner gave no valid plan in 3 attempts: {problem}")
    assert not problem[0].isupper()  # a clause of that sentence ("...: The reply starts like JSON")
    assert str(info.value).endswith(_ADVICE)


_ADVICE = (
    "; each reply went back to the planner's model with what was wrong "
    "(PlanError.last_reply is its last reply): give the planner a model or prompt that "
    "plans better, or raise Planner.max_plan_attempts (3; `max_plan_attempts` under `[planner]` in a team file)"
)


async def test_a_non_string_description_goes_back_to_the_model_then_runs() -> None:
    bad = '[{"description": "look up"}, {"description": {"text": "refund"}, "depends_on": [1]}]'
    good = plan_json({"description": "look up"}, {"description": "refund", "depends_on": ["s1"]})
    brain = Brain([bad, good])
    result = await _team(brain).run("goal")
    assert result.committed == ("s1", "s2")
    assert result.plans[0].steps[1].depends_on == ("s1",)  # the edge was not dropped
    assert '"description" is an object' in _last_user_text(brain.plan_requests[1])


@pytest.mark.parametrize(("written", "quoted"), [("7", "7"), ('"step 7"', "'step 7'")])
async def test_a_numbered_dependency_on_no_step_is_quoted_as_the_model_wrote_it(
    written: str, quoted: str
) -> None:
    # The re-prompt said "depends on step 's7'": an id the model never wrote.
    bad = (
        f'{{"steps": [{{"description": "a"}}, {{"description": "b", "depends_on": [{written}]}}]}}'
    )
    good = plan_json({"description": "a"}, {"description": "b", "depends_on": ["s1"]})
    brain = Brain([bad, good])
    result = await _team(brain).run("goal")
    assert result.committed == ("s1", "s2")
    assert (
        f"step s2 depends on {quoted}, which is no step of the plan (no step is number 7, "
        "and none has the id 's7'); s2 may depend on: s1"
    ) in _last_user_text(brain.plan_requests[1])


async def test_lone_surrogates_from_every_role_crash_nothing() -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return f"did \udc80 {description}"

    plan = '{"steps": [{"description": "check \ud800", "check": "never"}]}'
    replan = '["fix \udfff it", "and \ud83d\ude80"]'
    brain = Brain([plan, replan], work=work, synthesis="done \ud800")
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team = _team(brain, telemetry=Telemetry(provider, capture_content=True), check=True)
    async with team.start() as running:
        result = await running.run("goal")
    assert result.status == "completed"
    assert [p.version for p in result.plans] == [1, 2]
    assert result.plans[1].steps[-1].description == "and \U0001f680"
    msgspec.json.encode(result)  # events, steps, answer: all encodable (as the CLI writes them)
    provider.shutdown()
    for span in collector.spans():
        for value in (span.attributes or {}).values():
            if isinstance(value, str):
                value.encode("utf-8")


async def test_a_lone_surrogate_in_tool_arguments_reaches_the_tool_as_valid_text() -> None:
    seen: list[str] = []

    @tool
    def note(text: str) -> str:
        """Write a note."""
        seen.append(text)
        return "noted"

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not results:
            return tool_call_response("note", {"text": "a\ud800b"})
        return f"{results[0].content} \ud83d"

    brain = Brain([plan_json({"description": "note it"})], work=work)
    model = ScriptedModel(brain)
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="notes", model=model, tools=[note])],
        telemetry=Telemetry(provider, capture_content=True),
    )
    result = await team.run("goal")
    assert result.status == "completed"
    assert seen == ["a\ufffdb"]
    msgspec.json.encode(result)


async def test_stale_report_mid_replan_names_only_announced_versions() -> None:
    """Every replan reply is blank, so version 2 never exists; a report of version 1
    dropped while the replan is asked for must not name version 2."""
    hang = Hang()
    stale_seen = anyio.Event()
    plans = [plan_json({"description": "probe", "check": "never"}, {"description": "slow"})]
    brain = Brain(plans + ["   "] * 3, work=hang)
    work = brain.work

    async def planner_waits(request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner") and brain.plan_requests:
            await stale_seen.wait()  # the replan answers only once the late report was dropped
        return await brain(request)

    async def probe_returns(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "probed" if description == "probe" else await work(description, results, request)

    brain.work = probe_returns
    model = ScriptedModel(planner_waits)
    team = Team(
        name="t",
        planner=Planner(model=model, max_plan_attempts=3),
        workers=[Worker(name="w", description="does things", model=model)],
        checks={"never": Check(description="never passes", predicate=_never)},
    )
    events: list[Event] = []
    async with team.start() as running, running.stream("goal") as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, StaleReportDropped):
                stale_seen.set()
    (dropped,) = [e for e in events if isinstance(e, StaleReportDropped)]
    assert (dropped.step_id, dropped.report_version, dropped.current_version) == ("s2", 1, 1)
    # Cut as the probe's check failed: in its model call, or before it began (the cut
    # reaches a step at once, as the planner decides, whether or not it had started).
    assert dropped.status == "cancelled"
    assert hang.cancelled in ([], ["slow"])
    last = events[-1]
    assert isinstance(last, RunFailed)
    assert last.error_type == "PlanError"
    assert announced_violations(events) == []


async def test_a_dependency_on_a_step_past_max_steps_says_it_was_cut() -> None:
    # The re-prompt said "step b depends on step 'c', which does not exist", of a step
    # the model did write: max_steps had cut it, which nothing said.
    too_long = plan_json(
        {"id": "a", "description": "A"},
        {"id": "b", "description": "B", "depends_on": ["c"]},
        {"id": "c", "description": "C"},
    )
    fitting = plan_json({"id": "a", "description": "A"}, {"id": "c", "description": "C"})
    brain = Brain([too_long, fitting])
    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model, max_steps=2),
        workers=[Worker(name="w", description="does things", model=model)],
    )
    result = await team.run("goal")
    assert result.committed == ("a", "c")
    assert (
        "step b depends on step 'c', which is past the 2 steps a plan may have (the plan "
        "had 3), so it was cut and never runs; plan at most 2 steps, each depending only "
        "on steps among them"
    ) in _last_user_text(brain.plan_requests[1])
    assert "does not exist" not in _last_user_text(brain.plan_requests[1])
