"""What a user sees printing regiment's objects in a REPL or a log line: short, useful,
and never a secret (an API key, a password in a journal's URL, a tool's deps) nor a
long answer, output or tool result in full."""

from __future__ import annotations

import pytest

from regiment import (
    AnthropicModel,
    Budget,
    Planner,
    RunContext,
    ScriptedModel,
    Team,
    TeamWorker,
    Telemetry,
    ToolResult,
    Worker,
    text_response,
    tool,
)
from regiment.hierarchy import RunCompleted
from regiment.models import ModelRequest, Reply

pytestmark = pytest.mark.anyio

SECRET = "sk-ant-do-not-print-me"
LONG = "word " * 2000


@tool
def lookup(city: str) -> str:
    """Today's weather for a city."""
    return LONG


def brain(request: ModelRequest) -> Reply:
    if request.role == "planner":
        return '{"steps": [{"description": "look up the weather in Oslo"}]}'
    return text_response(LONG)


def make_team() -> Team:
    model = ScriptedModel(brain)
    keyed = AnthropicModel("claude-sonnet-4-5", api_key=SECRET)
    return Team(
        name="weather",
        planner=Planner(model=model),
        budget=Budget(model_calls=10, on_exhausted="raise"),
        workers=[
            Worker(
                name="forecaster", description="Knows the weather.", model=model, tools=[lookup]
            ),
            Worker(name="writer", description="Writes.", model=keyed),
        ],
    )


def test_a_teams_parts_print_short_and_without_keys() -> None:
    team = make_team()
    assert repr(team) == (
        "Team('weather', workers=['forecaster', 'writer'], "
        "budget=Budget(model_calls=10, on_exhausted='raise'))"
    )
    assert repr(team.workers[0]) == (
        "Worker('forecaster', model=ScriptedModel('scripted', script=brain, calls=0), "
        "tools=[Tool('lookup')])"
    )
    assert SECRET not in repr(team.workers[1])
    assert (
        repr(team.planner)
        == "Planner(model=ScriptedModel('scripted', script=brain, calls=0), max_steps=10)"
    )
    assert repr(Budget()) == "Budget()"
    assert (
        repr(ScriptedModel(["a", "b"], name="m")) == "ScriptedModel('m', script=2 replies, calls=0)"
    )
    assert repr(Telemetry()).startswith("Telemetry(tracing=")
    nested = TeamWorker(name="sub", description="A sub-team.", team=team)
    assert repr(nested) == "TeamWorker('sub', team='weather')"


def test_a_tools_context_prints_the_type_of_its_deps_only() -> None:
    context = RunContext(
        run_id="r", step_id="s1", worker="w", plan_version=1, call_id="c", idempotency_key="k",
        deps={"api_key": SECRET},
    )  # fmt: skip
    assert (
        repr(context)
        == "RunContext(run_id='r', step_id='s1', worker='w', call_id='c', deps=<dict>)"
    )


def test_a_long_tool_result_prints_cut() -> None:
    result = ToolResult(call_id="c", tool_name="lookup", content={"text": LONG})
    shown = repr(result)
    assert shown.startswith(
        "ToolResult(tool_name='lookup', call_id='c', is_error=False, content={\"text\": "
    )
    assert len(shown) < 200


async def test_a_run_its_events_result_and_reports_print_short() -> None:
    team = make_team()
    team = Team(name=team.name, planner=team.planner, workers=[team.workers[0]])
    async with team.start() as running:
        assert repr(running) == "<RunningTeam 'weather': 0 runs in progress, journal=None>"
        async with running.stream("weather in Oslo?") as events:
            assert repr(events) == "<RunEvents: running>"
            assert repr(running) == "<RunningTeam 'weather': 1 runs in progress, journal=None>"
            async for event in events:
                if isinstance(event, RunCompleted):
                    result = event.result
        assert repr(events) == f"<RunEvents of run {result.run_id!r}: ended completed>"
    shown = repr(result)
    assert shown.startswith(
        f"RunResult(run_id={result.run_id!r}, status='completed', answer='word word"
    )
    assert (
        f"({len(result.answer):,} characters), plans=1, steps=1, model_calls=3, tool_calls=0, usage=Usage("
        in shown
    )
    assert len(shown) < 400
    (report,) = result.steps
    assert repr(report).startswith(
        "StepReport(step_id='s1', plan_version=1, attempt=1, worker='forecaster', status='done', "
        "output='word word"
    )
    assert len(repr(report)) < 250
