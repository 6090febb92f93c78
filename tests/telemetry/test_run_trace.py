"""A whole run as one trace: the refund story exported over real OTLP/HTTP, and
in-memory checks that content stays out by default and runs never mix."""

from __future__ import annotations

import dataclasses

import anyio
import pytest

from examples.refund.brain import refund_brain
from examples.refund.team import GOAL, build_team
from examples.refund.tools import Ledger
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ScriptedModel
from regiment.telemetry import SpanCollector, Telemetry, configure_tracing

from .otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.anyio


def _one(spans: tuple[ReceivedSpan, ...], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r}: {sorted(s.name for s in spans)}"
    return found[0]


def _all(spans: tuple[ReceivedSpan, ...], name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == name]


def _plan_and_replan(spans: tuple[ReceivedSpan, ...]) -> tuple[ReceivedSpan, ReceivedSpan]:
    """The first plan's span and the replan's: both ``plan planner`` (a replan is
    planning, the conventions' ``plan`` operation), told apart by ``regiment.plan.replan``."""
    plans = _all(spans, "plan planner")
    (first,) = [s for s in plans if "regiment.plan.replan" not in s.attributes]
    (replan,) = [s for s in plans if s.attributes.get("regiment.plan.replan") is True]
    return first, replan


async def test_refund_run_reads_as_one_trace_over_otlp() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("refund-app", endpoint=receiver.endpoint, set_global=False)
        team = build_team(ScriptedModel(refund_brain), Ledger())
        team = dataclasses.replace(team, telemetry=Telemetry(handle.provider))
        result = await team.run(GOAL)
        handle.shutdown()
        spans = receiver.spans()

    root = _one(spans, "invoke_agent refunds")
    assert root.parent_span_id is None
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert result.trace_id == root.trace_id
    assert {s.resource["service.name"] for s in spans} == {"refund-app"}
    assert root.attributes["regiment.run.id"] == result.run_id
    assert root.attributes["regiment.plan.versions"] == 2
    assert root.attributes["regiment.reports.stale_dropped"] == 0
    assert root.attributes["regiment.run.status"] == "completed"

    by_id = {s.span_id: s for s in spans}
    plan, replan = _plan_and_replan(spans)
    synth = _one(spans, "synthesize")
    verify = _one(spans, "verify")
    for phase in (plan, replan, synth, verify):
        assert phase.parent_span_id == root.span_id, phase.name
    # a phase that asks a model names its operation; a check (a predicate) is no GenAI one
    operations = [p.attributes.get("gen_ai.operation.name") for p in (plan, replan, synth, verify)]
    # A replan is planning: the conventions' `plan` operation and span name (it was a
    # `replan` of ours), marked regiment.plan.replan, with the versions it went between.
    assert operations == ["plan", "plan", "synthesize", None]
    assert replan.attributes["gen_ai.agent.name"] == "planner"
    assert replan.attributes["regiment.plan.old_version"] == 1
    assert replan.attributes["regiment.plan.new_version"] == 2
    assert replan.attributes["regiment.plan.version"] == 2
    assert plan.attributes["regiment.plan.version"] == 1
    assert "regiment.replan.reason" not in replan.attributes  # content, and capture is off
    reason_length = replan.attributes["regiment.replan.reason_length"]
    assert isinstance(reason_length, int)
    assert reason_length > len("order is not eligible for a refund: ")
    assert verify.attributes["regiment.check.passed"] is False
    # each planner-side model call sits inside its phase
    chats = _all(spans, "chat scripted")
    assert {by_id[c.parent_span_id].name for c in chats if c.parent_span_id} >= {
        "plan planner",
        "synthesize",
        "invoke_agent billing",
        "invoke_agent comms",
    }
    workers = _all(spans, "invoke_agent billing") + _all(spans, "invoke_agent comms")
    assert sorted(str(w.attributes["regiment.step.id"]) for w in workers) == ["s1", "s4", "s5"]
    assert all(w.parent_span_id == root.span_id for w in workers)
    tools = {s.name: s for s in spans if s.name.startswith("execute_tool")}
    assert set(tools) == {
        "execute_tool check_eligibility",
        "execute_tool flag_exception",
        "execute_tool email_customer",
    }
    for tool_span in tools.values():
        assert by_id[tool_span.parent_span_id or ""].name.startswith("invoke_agent ")
        assert tool_span.attributes["gen_ai.tool.call.id"]
    chat = chats[0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert "gen_ai.usage.input_tokens" in chat.attributes


async def test_no_content_by_default_and_interleaved_runs_never_mix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    from opentelemetry.sdk.trace import TracerProvider

    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    both_running = anyio.Event()
    arrived = 0

    async def brain(request: object) -> str:
        nonlocal arrived
        from regiment.models import ModelRequest

        assert isinstance(request, ModelRequest)
        if request.role in ("planner", "replanner"):
            return '{"steps": [{"description": "work"}]}'
        if request.role == "worker":
            arrived += 1
            if arrived == 2:
                both_running.set()
            await both_running.wait()  # both runs' steps are inside the one worker at once
            return "done"
        return "answer"

    model = ScriptedModel(brain)
    team = Team(
        name="t",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="w", model=model)],
        telemetry=Telemetry(provider),
    )
    results = []
    async with team.start() as running, anyio.create_task_group() as tg:

        async def one(goal: str) -> None:
            results.append(await running.run(goal))

        tg.start_soon(one, "goal one")
        tg.start_soon(one, "goal two")
    provider.shutdown()
    spans = collector.spans()
    assert len({r.trace_id for r in results}) == 2
    by_trace: dict[str, set[str]] = {}
    for span in spans:
        by_trace.setdefault(format(span.context.trace_id, "032x"), set()).add(span.name)
    assert set(by_trace) == {r.trace_id for r in results}
    for names in by_trace.values():
        assert "invoke_agent t" in names
        assert "invoke_agent w" in names
    ids = {s.context.span_id: s for s in spans}
    for span in spans:
        if span.parent is not None:
            assert span.parent.trace_id == span.context.trace_id
            assert span.parent.span_id in ids
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    for span in spans:
        assert not content_keys & set(span.attributes or {}), span.name


async def test_plan_and_replan_spans_say_how_many_steps_the_new_plan_has(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    # The refund team's planner has a plan guardrail; the steps are those the reply gave.
    result = await build_team(ScriptedModel(refund_brain), Ledger(), telemetry=telemetry).run(GOAL)
    plans = [dict(s.attributes or {}) for s in collector.spans() if s.name == "plan planner"]
    first, second = result.plans
    (plan,) = [p for p in plans if "regiment.plan.replan" not in p]
    (replan,) = [p for p in plans if p.get("regiment.plan.replan") is True]
    assert plan["regiment.plan.steps"] == len(first.steps)
    assert replan["regiment.plan.new_version"] == second.version == 2
    assert replan["regiment.plan.steps"] == len(second.steps) == 3  # s1 kept, s4 and s5 new


async def test_a_replan_span_says_how_many_steps_without_plan_guardrails(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    from regiment.models import ModelRequest

    def brain(request: ModelRequest) -> str:
        if request.role == "planner":
            return '{"steps": [{"id": "s1", "description": "look"}]}'
        if request.role == "replanner":
            return '{"steps": [{"description": "look again"}, {"description": "report"}]}'
        if request.role == "worker" and request.step_id == "s1":
            raise RuntimeError("the lookup broke")
        return "answer"

    model = ScriptedModel(brain)
    worker = Worker(name="w", description="w", model=model)
    team = Team(name="t", planner=Planner(model=model), workers=[worker], telemetry=telemetry)
    result = await team.run("go")
    replan = next(s for s in collector.spans() if (s.attributes or {}).get("regiment.plan.replan"))
    assert replan.name == "plan planner"
    assert dict(replan.attributes or {})["regiment.plan.steps"] == len(result.plans[-1].steps) == 2
    assert replan.end_time is not None


def _readme() -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


async def test_the_readme_tree_is_the_refund_story_s(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    import re

    readme = _readme()
    shown = re.search(r"What a run looks like.*?```\n(.*?)```", readme, re.S)
    assert shown is not None
    result = await build_team(ScriptedModel(refund_brain), Ledger(), telemetry=telemetry).run(GOAL)
    assert result.trace_id is not None
    drawn = collector.render(int(result.trace_id, 16))
    # The same spans in the same places with the same attributes (times and ids vary).
    varying = re.compile(r"\d+\.\d ms|run-\d+-[0-9a-f]{8}|call_[0-9a-f]{16}")
    assert varying.sub("", shown.group(1)).strip() == varying.sub("", drawn).strip()
