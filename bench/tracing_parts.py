"""Row 6's regiment-own tracing cost, part by part, in CPU instructions (issue #22).

    .venv/bin/python bench/tracing_parts.py            # instructions per call, per part
    .venv/bin/python bench/tracing_parts.py --counts   # how often a traced step calls each

``instructions.py --tracing`` gives regiment's own cost as one figure (a traced step
less an untraced one less the SDK floor). This splits the span code a step runs into
its parts, each timed alone under callgrind (``callgrind_count``: 200 calls against
1,200, exact), with the inputs a row 2 step gives it, through a provider like row
6's (a ``BatchSpanProcessor`` to a counting sink):

* ``agent span`` / ``chat span``: a worker step's ``invoke_agent`` span and its
  model call's ``chat`` span as regiment opens and finishes them (with the step's
  outcome; the reply's usage), against ``... bare SDK``: the same span (name,
  parent, attributes, the same later ``set_attribute(s)``) made with the SDK alone.
  The difference is regiment's Python around the SDK for that span.
* its parts: ``attribute dicts`` (the start attributes, built per call; the chat
  span's include the applied settings), ``span names``, ``trace context`` (the
  parent parsed from the step's envelope headers), ``recorder`` (the outcome's and
  the reply's own Python, less the SDK's ``set_attribute(s)``), and ``console view``
  (``ConsoleTraceProcessor`` holding one finished span; not on row 6's path).

``--counts`` runs traced row 2 runs under ``sys.settrace`` and prints how many times
a step calls each span method (run-level spans shared over the run's 10 steps).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, cast

import anyio
import regiment_cases as rc
from bench_util import SEQ_STEPS
from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind, set_span_in_context

from regiment.hierarchy import _model_call as mc
from regiment.models import Message, ModelRequest, Usage
from regiment.models._settings import effective_settings
from regiment.telemetry import ConsoleTraceProcessor, Telemetry
from regiment.telemetry import semconv as sc
from regiment.telemetry._attributes import agent_attributes
from regiment.telemetry._propagation import extract_context, headers_for

__all__ = ("PARTS", "main")

# The model call's helpers, as the measured tree has them (they moved to _span_inputs).
_TUNING: Any = vars(mc)["_tuning"]

_SMALL, _LARGE = 200, 1_200


def _setup() -> dict[str, Any]:
    """What a step of row 2 hands the span code: a run span's headers, the worker's
    attributes, the model and a request."""
    telemetry, _, provider = rc.tracing()
    run = telemetry.tracer.start_span("invoke_agent bench")
    model = getattr(rc.sequential_team(1).workers[0], "model")  # noqa: B009 (a Worker)
    return {
        "telemetry": telemetry,
        "tracer": provider.get_tracer("bench"),
        "headers": headers_for(run),
        "worker": {sc.GEN_AI_AGENT_DESCRIPTION: "does any step"},
        "model": model,
        "request": ModelRequest(messages=(Message.user("do the step"),), max_tokens=1024),
        "usage": Usage(input_tokens=30, output_tokens=12),
    }


def _agent_span(s: dict[str, Any]) -> Callable[[], None]:
    telemetry, headers, worker = s["telemetry"], s["headers"], s["worker"]

    def unit() -> None:
        with telemetry.agent_span(
            "w",
            parent_headers=headers,
            run_id="r-1",
            step_id="s1",
            plan_version=1,
            attempt=1,
            attributes=worker,
        ) as span:
            telemetry.recorder.step_outcome(span, "done")

    return unit


def _agent_attrs(s: dict[str, Any]) -> dict[str, Any]:
    attributes = agent_attributes("w", None, "r-1", "s1", 1, 1)
    attributes.update(s["worker"])
    return attributes


def _bare(s: dict[str, Any], name: str, attributes: dict[str, Any], later: dict[str, Any],
          kind: SpanKind = SpanKind.INTERNAL) -> Callable[[], None]:  # fmt: skip
    tracer, parent = s["tracer"], extract_context(s["headers"])

    def unit() -> None:
        span = tracer.start_span(name, parent, kind, attributes)
        token = otel_context.attach(set_span_in_context(span))
        if len(later) == 1:
            span.set_attribute(*next(iter(later.items())))
        else:
            span.set_attributes(later)
        otel_context.detach(token)
        span.end()

    return unit


def _tuning() -> Callable[[Any, ModelRequest], dict[str, Any]]:
    """What ``_traced`` does for the applied settings in the tree measured: read them
    layer by layer (``_tuning(settings, request)``), or, before, through
    ``effective_settings``."""
    if _TUNING.__code__.co_argcount == 2:
        return cast("Callable[[Any, ModelRequest], dict[str, Any]]", _TUNING)
    return lambda settings, request: _TUNING(effective_settings(settings, request))


def _chat_span(s: dict[str, Any]) -> Callable[[], None]:
    telemetry, model, request, usage = s["telemetry"], s["model"], s["request"], s["usage"]
    tuned = _tuning()

    def unit() -> None:
        tuning = tuned(getattr(model, "settings", None), request)
        with telemetry.chat_span(
            model.name,
            model.provider,
            agent_name="w",
            server=vars(mc)["_server"](model),
            attributes=tuning,
        ) as span:
            telemetry.recorder.chat_response(
                span, finish_reasons=("end_turn",), usage=usage, response_model=model.name
            )

    return unit


def _chat_attrs(s: dict[str, Any]) -> dict[str, Any]:
    model, request = s["model"], s["request"]
    tuning = _tuning()(getattr(model, "settings", None), request)
    attributes: dict[str, Any] = {  # as chat_span builds them (inline since perf29)
        sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
        sc.GEN_AI_PROVIDER_NAME: model.provider,
        sc.GEN_AI_REQUEST_MODEL: model.name,
        sc.GEN_AI_AGENT_NAME: "w",
    }
    attributes.update(tuning)
    return attributes


def _response_attrs(s: dict[str, Any]) -> dict[str, Any]:
    usage = s["usage"]
    return {
        sc.GEN_AI_RESPONSE_FINISH_REASONS: ("end_turn",),
        sc.GEN_AI_RESPONSE_MODEL: s["model"].name,
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 0,
        sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: 0,
    }


def _recorder(s: dict[str, Any]) -> Callable[[], None]:
    """The recorder's calls on a recording span, less (below) the SDK calls they make."""
    telemetry, usage, name = s["telemetry"], s["usage"], s["model"].name
    span = s["tracer"].start_span("chat bench")

    def unit() -> None:
        telemetry.recorder.step_outcome(span, "done")
        telemetry.recorder.chat_response(
            span, finish_reasons=("end_turn",), usage=usage, response_model=name
        )

    return unit


def _recorder_sdk(s: dict[str, Any]) -> Callable[[], None]:
    span, later = s["tracer"].start_span("chat bench"), _response_attrs(s)

    def unit() -> None:
        span.set_attribute(sc.REGIMENT_STEP_OUTCOME, "done")
        span.set_attributes(later)

    return unit


def _attribute_dicts(s: dict[str, Any]) -> Callable[[], None]:
    def unit() -> None:
        _agent_attrs(s)
        _chat_attrs(s)

    return unit


def _span_names(s: dict[str, Any]) -> Callable[[], None]:
    agent, model = "w", s["model"].name

    def unit() -> None:
        _ = f"invoke_agent {agent}", f"chat {model}"

    return unit


def _trace_context(s: dict[str, Any]) -> Callable[[], None]:
    headers = s["headers"]

    def unit() -> None:
        extract_context(headers)

    return unit


def _console(s: dict[str, Any]) -> Callable[[], None]:
    """One finished span held and (as a root) drawn by the console view."""
    provider = rc.tracing()[2]
    provider.add_span_processor(ConsoleTraceProcessor(open("/dev/null", "w")))  # noqa: SIM115
    tracer = provider.get_tracer("bench")

    def unit() -> None:
        tracer.start_span("chat bench", attributes=_chat_attrs(s)).end()

    return unit


def _console_sdk(s: dict[str, Any]) -> Callable[[], None]:
    tracer = rc.tracing()[2].get_tracer("bench")
    return lambda: tracer.start_span("chat bench", attributes=_chat_attrs(s)).end()


PARTS: dict[str, Callable[[dict[str, Any]], Callable[[], None]]] = {
    "agent span": _agent_span,
    "agent span, bare SDK": lambda s: _bare(
        s, "invoke_agent w", _agent_attrs(s), {sc.REGIMENT_STEP_OUTCOME: "done"}
    ),
    "chat span": _chat_span,
    "chat span, bare SDK": lambda s: _bare(
        s, f"chat {s['model'].name}", _chat_attrs(s), _response_attrs(s), SpanKind.CLIENT
    ),
    "attribute dicts (agent + chat)": _attribute_dicts,
    "span names (agent + chat)": _span_names,
    "trace context (parent from headers)": _trace_context,
    "recorder (step outcome + reply)": _recorder,
    "recorder, its SDK calls alone": _recorder_sdk,
    "console view, one span": _console,
    "console view off, the same span": _console_sdk,
}


def _child(part: str, calls: int) -> None:
    unit = PARTS[part](_setup())
    for _ in range(calls):
        unit()


def _counts() -> None:
    """How many times a traced row 2 step calls each span method (per run / steps)."""
    watched: dict[CodeType, str] = {
        getattr(Telemetry, name).__code__: name
        for name in ("run_span", "plan_span", "phase_span", "agent_span", "chat_span", "tool_span")
    }
    counts: Counter[str] = Counter()

    def tracer(frame: FrameType, event: str, _: Any) -> Any:
        if event == "call" and (name := watched.get(frame.f_code)) is not None:
            counts[name] += 1

    runs = 5
    team = rc.sequential_team(SEQ_STEPS, recorded=False, telemetry=rc.tracing()[0])

    async def go() -> None:
        async with team.start() as running:
            await running.run("warm up")
            sys.settrace(tracer)
            for _ in range(runs):
                await running.run("do the steps")
            sys.settrace(None)

    anyio.run(go)
    print(f"span methods per step (traced row 2, {SEQ_STEPS}-step runs):")
    for name, count in counts.most_common():
        print(f"  {count / (runs * SEQ_STEPS):6.2f}  Telemetry.{name}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]))
        return
    if "--counts" in sys.argv:
        _counts()
        return
    from callgrind_count import instructions_per_unit

    print("regiment's span code, callgrind, instructions per call:")
    for part in PARTS:
        figure = instructions_per_unit([__file__, "--child", part], _SMALL, _LARGE)
        print(f"  {figure / 1000:8.2f} k  {part}", flush=True)


if __name__ == "__main__":
    main()
