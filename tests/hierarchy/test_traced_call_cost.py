"""What a traced worker step's model call costs around its span (issue #22, row 6): the
step awaits the span's own coroutine (``ModelCaller.traced``), with no ``call`` coroutine
around it and no ``_reply`` coroutine inside it (nor a property hop to the recorder's
content flag). Counted exactly by the interpreter's profiler over warmed-up runs; the
spans themselves are checked in ``tests/telemetry``."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import StatusCode

from regiment.errors import ModelError, RunError
from regiment.hierarchy import Planner, Team, Worker, _model_call
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart, Usage
from regiment.telemetry import SpanCollector, Telemetry

from .brains import Brain, plan_json
from .profiled import CallCounter

pytestmark = pytest.mark.anyio

_AROUND = (
    _model_call.ModelCaller.call.__code__,
    _model_call._reply.__code__,
    Telemetry.capture_content.fget.__code__,  # type: ignore[attr-defined]  # (the recorder's flag)
)


async def _work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
    return f"did {description}"


def _team(steps: int, work: object = _work) -> tuple[Team, SpanCollector, TracerProvider]:
    plan = [
        {"id": f"s{i}", "description": f"part {i}", "depends_on": [f"s{i - 1}"] if i > 1 else []}
        for i in range(1, steps + 1)
    ]
    model = ScriptedModel(Brain([plan_json(*plan)] * 2, work=work))  # type: ignore[arg-type]
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team = Team(
        name="steps",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does parts", model=model)],
        telemetry=Telemetry(provider),
    )
    return team, collector, provider


async def _counted(steps: int) -> tuple[int, int]:
    """``call`` and ``_reply`` frames in one traced run of ``steps`` steps; its chat spans."""
    team, collector, provider = _team(steps)
    counter = CallCounter(lambda frame, event, _: event == "call" and frame.f_code in _AROUND)
    try:
        async with team.start() as running:
            assert (await running.run("warm up")).status == "completed"
            collector.clear()
            with counter:
                result = await running.run("do the parts")
    finally:
        provider.shutdown()
    assert result.status == "completed"
    chats = [s for s in collector.spans() if s.name.startswith("chat ")]
    return counter.count, len(chats)


async def test_a_traced_step_s_model_call_has_no_coroutine_around_its_span() -> None:
    one, chats_one = await _counted(1)
    three, chats_three = await _counted(3)
    assert chats_three - chats_one == 2  # a chat span each step, as before
    assert three == one  # main: a `call`, a `_reply` and a `capture_content` each step more


async def _fails(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
    error = ModelError("the provider said no")
    error.usage = Usage(input_tokens=7, output_tokens=0)  # billed all the same
    raise error


async def test_a_traced_step_s_failed_call_is_still_on_its_span_with_what_it_spent() -> None:
    team, collector, provider = _team(1, _fails)
    try:
        async with team.start() as running:
            with pytest.raises(RunError):  # its step failed; the replan has no reply scripted
                await running.run("do the part")
    finally:
        provider.shutdown()
    failed = [
        s
        for s in collector.spans()
        if s.name.startswith("chat ") and s.status.status_code is StatusCode.ERROR
    ]
    assert failed, [s.name for s in collector.spans()]
    attributes = failed[0].attributes or {}
    assert attributes.get("gen_ai.usage.input_tokens") == 7
    assert attributes.get("error.type") == "regiment.errors.ModelError"


async def test_a_reply_is_still_checked_in_the_span(anyio_backend: str) -> None:
    # valid_response still runs inside the span: a reply's text made encodable.
    async def lone_surrogate(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return "bad \ud800 text"

    team, _, provider = _team(1, lone_surrogate)
    try:
        async with team.start() as running:
            result = await running.run("do the part")
    finally:
        provider.shutdown()
    assert result.status == "completed"
    assert "\ud800" not in (result.steps[0].output or "")
