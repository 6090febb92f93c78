"""A planner-side model call that nothing judges or traces enters its cancel scope and
nothing else (issue #22): its guards' purse, the run span's context and its phase span
were three null contexts a call (six calls entered and left, and the calls that made
them: two a run, the plan's and the synthesis'). A traced, judged or replanning call
still enters them all (the tests below the counts).

Counted exactly by the interpreter's profiler over a warmed-up team's 1-step run."""

from __future__ import annotations

import contextlib
from types import FrameType

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from regiment.errors import RunError
from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy.run import _phase_span
from regiment.hierarchy.run._calls import PhaseCalls
from regiment.models import ModelRequest, ModelResponse, ScriptedModel
from regiment.telemetry import Telemetry

from .brains import Brain, plan_json
from .profiled import CallCounter, Matches

pytestmark = pytest.mark.anyio


def _team(telemetry: Telemetry | None = None) -> Team:
    model = ScriptedModel(Brain([plan_json({"description": "one"})] * 2))
    return Team(
        name="quiet",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
        telemetry=telemetry,
    )


async def _calls_in_one_run(matches: Matches) -> int:
    counter = CallCounter(matches)
    async with _team().start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do it")
    assert result.status == "completed"
    return counter.count


async def test_an_untraced_unjudged_planner_call_enters_no_null_context() -> None:
    # 3 a call on main (the purse's, the run span's, the phase span's): 6 a 1-step run.
    enter = contextlib.nullcontext.__enter__.__code__
    call = PhaseCalls._call.__code__

    def entered_by_a_call(frame: FrameType, event: str, _: object) -> bool:
        back = frame.f_back
        return (
            event == "call" and frame.f_code is enter and back is not None and back.f_code is call
        )

    assert await _calls_in_one_run(entered_by_a_call) == 0


async def test_an_untraced_run_asks_for_no_phase_span() -> None:
    # phase_span was asked for each planner-side call (2 a 1-step run on main), to get
    # the shared null context back.
    code = _phase_span.phase_span.__code__
    assert await _calls_in_one_run(lambda frame, event, _: frame.f_code is code) == 0


async def test_a_traced_run_s_planner_calls_still_have_their_phase_spans() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result = await _team(Telemetry(provider)).run("do it")
    assert result.status == "completed"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    root = spans["invoke_agent quiet"].context
    assert root is not None
    for name in ("plan planner", "synthesize"):
        parent = spans[name].parent
        assert parent is not None
        assert parent.span_id == root.span_id
        assert spans[name].end_time is not None


async def test_an_untraced_planner_call_that_raises_still_fails_the_run() -> None:
    async def broken(request: ModelRequest) -> ModelResponse:
        raise RuntimeError("the planner's model is down")

    model = ScriptedModel(broken)
    team = Team(
        name="quiet",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does steps", model=model)],
    )
    with pytest.raises(RunError, match=r"the plan model call failed: .*model is down") as raised:
        await team.run("do it")
    assert type(raised.value.__cause__) is RuntimeError
