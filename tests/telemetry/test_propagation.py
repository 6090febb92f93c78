"""Trace context through envelopes: inject on one side, activate or parent on the other."""

from __future__ import annotations

import contextlib

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from regiment.telemetry import OTelPropagator, SpanCollector, Telemetry, trace_id_hex

pytestmark = pytest.mark.anyio


def by_name(collector: SpanCollector, name: str) -> list[ReadableSpan]:
    return [span for span in collector.spans() if span.name == name]


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


class Mailbox:
    """Stands in for an actor mailbox: carries (headers, payload) between tasks."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[tuple[dict[str, str], str]](10)


async def test_propagator_round_trip_parents_the_handler_span_whatever_is_current(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    propagator = OTelPropagator()
    mailbox = Mailbox()
    ready = anyio.Event()

    async def receiver() -> None:
        # The receiving "actor" has its own ambient span: it must not become the parent.
        with telemetry.phase_span("compress"):
            ready.set()
            async with mailbox.receive:
                async for headers, step in mailbox.receive:
                    with propagator.activate(headers), telemetry.agent_span("worker", step_id=step):
                        pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(receiver)
        await ready.wait()
        with telemetry.run_span("team", "r1", "goal") as run:
            headers = propagator.inject()
            assert set(headers) == {"traceparent"}
            assert headers["traceparent"].split("-")[1] == trace_id_hex(run)
            await mailbox.send.send((headers, "s1"))
        await mailbox.send.aclose()

    (worker,) = by_name(collector, "invoke_agent worker")
    (root,) = by_name(collector, "invoke_agent team")
    assert parent_id(worker) == span_id(root)
    assert worker.context is not None
    assert root.context is not None
    assert worker.context.trace_id == root.context.trace_id


async def test_activate_replaces_the_ambient_context_and_restores_it(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    propagator = OTelPropagator()
    with telemetry.phase_span("critique") as ambient:
        with propagator.activate({}), telemetry.phase_span("synthesize"):
            pass
        # Leaving activate() restored the ambient span.
        assert propagator.inject() == telemetry.headers_for(ambient)
    (synth,) = by_name(collector, "synthesize")
    assert synth.parent is None  # no headers: a new trace, not the ambient span's child


async def test_agent_span_takes_its_parent_from_headers_not_the_current_context(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    with telemetry.run_span("team", "r1", "goal") as run_one:
        headers_one = telemetry.headers_for(run_one)
    with telemetry.run_span("team", "r2", "goal") as run_two:
        # A worker serving both runs, with run two's span current: run one's step
        # must still land in run one's trace.
        with telemetry.agent_span("billing", parent_headers=headers_one, step_id="a"):
            pass
        with telemetry.agent_span("billing", step_id="b"):
            pass
    one_id, two_id = trace_id_hex(run_one), trace_id_hex(run_two)
    assert one_id is not None
    assert two_id is not None
    assert one_id != two_id
    step_a, step_b = by_name(collector, "invoke_agent billing")
    assert step_a.context is not None
    assert step_b.context is not None
    assert format(step_a.context.trace_id, "032x") == one_id
    assert format(step_b.context.trace_id, "032x") == two_id


async def test_interleaved_runs_never_parent_each_others_spans(
    telemetry: Telemetry, collector: SpanCollector
) -> None:
    """Two runs on one shared worker, their steps interleaved through one mailbox."""
    propagator = OTelPropagator()
    mailbox = Mailbox()
    both_sent = anyio.Event()
    sent = 0

    async def run(run_id: str) -> None:
        nonlocal sent
        with telemetry.run_span("team", run_id, "goal"):
            for step in ("1", "2"):
                await mailbox.send.send((propagator.inject(), f"{run_id}-{step}"))
            sent += 1
            if sent == 2:
                both_sent.set()
            # Both run spans stay open until both runs have queued their steps.
            await both_sent.wait()

    async def worker() -> None:
        async with mailbox.receive:
            async for headers, step in mailbox.receive:
                with (
                    propagator.activate(headers),
                    telemetry.agent_span("shared", step_id=step),
                    telemetry.tool_span("lookup", f"call-{step}"),
                ):
                    await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as outer:
        outer.start_soon(worker)
        async with anyio.create_task_group() as runs:
            runs.start_soon(run, "ra")
            runs.start_soon(run, "rb")
        await mailbox.send.aclose()

    roots = {
        span.attributes["regiment.run.id"]: span
        for span in by_name(collector, "invoke_agent team")
        if span.attributes
    }
    steps = by_name(collector, "invoke_agent shared")
    assert len(steps) == 4
    for step in steps:
        assert step.attributes is not None
        owner = roots[str(step.attributes["regiment.step.id"]).split("-")[0]]
        assert parent_id(step) == span_id(owner)
    for tool in by_name(collector, "execute_tool lookup"):
        (step,) = [s for s in steps if span_id(s) == parent_id(tool)]
        assert step.attributes is not None
        assert tool.attributes is not None
        step_id = str(step.attributes["regiment.step.id"])
        assert tool.attributes["gen_ai.tool.call.id"] == f"call-{step_id}"


def test_the_propagator_fits_the_actor_runtime_protocol() -> None:
    from regiment.actors import ContextPropagator  # checked here only: telemetry never imports it

    propagator: ContextPropagator = OTelPropagator()
    assert isinstance(propagator, ContextPropagator)
    assert isinstance(propagator.activate({}), contextlib.AbstractContextManager)
