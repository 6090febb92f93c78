"""``Telemetry.tracing`` follows the provider: off until one records, then on.

OpenTelemetry's global provider can be set once per process, so every test
runs its code in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_PROVIDER_VARIABLE = "OTEL_PYTHON_TRACER_PROVIDER"


def run_python(code: str, **env: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; ``env`` is added to a copy of ours
    without the provider variable. Returns the printed words."""
    environment = {k: v for k, v in os.environ.items() if k != _PROVIDER_VARIABLE}
    environment.update(env)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_tracing_turns_on_when_a_global_provider_is_installed_later() -> None:
    out = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from regiment.telemetry import Telemetry

        telemetry = Telemetry()
        print(telemetry.tracing, telemetry.tracing)  # asked twice: "off" is not remembered
        with telemetry.run_span("team", "run-1", "goal") as span:
            print(span.is_recording())
        trace.set_tracer_provider(TracerProvider())
        print(telemetry.tracing)
        with telemetry.run_span("team", "run-2", "goal") as span:
            print(span.is_recording(), span.get_span_context().is_valid)
        print(Telemetry().tracing)
        """
    )
    assert out == ["False", "False", "False", "True", "True", "True", "True"]


def test_while_nothing_is_installed_tracing_does_not_ask_the_api() -> None:
    # Asking the API for the provider reads os.environ every time; the check
    # runs before every span, so it must answer from what it already knows.
    out = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from regiment.telemetry import Telemetry

        telemetry = Telemetry()
        real = trace.get_tracer_provider

        def refuse():
            raise AssertionError("tracing asked the API for the provider")

        trace.get_tracer_provider = refuse
        print(all(not telemetry.tracing for _ in range(100)))
        trace.get_tracer_provider = real
        trace.set_tracer_provider(TracerProvider())
        print(telemetry.tracing)
        """
    )
    assert out == ["True", "True"]


def test_the_provider_named_by_the_environment_variable_turns_tracing_on() -> None:
    # opentelemetry-sdk registers its TracerProvider under this entry point name
    # (group opentelemetry_tracer_provider); the API loads it on first request.
    out = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from regiment.telemetry import Telemetry

        telemetry = Telemetry()
        print(telemetry.tracing)
        print(isinstance(trace.get_tracer_provider(), TracerProvider))
        with telemetry.run_span("team", "run-1", "goal") as span:
            print(span.is_recording())
        """,
        **{_PROVIDER_VARIABLE: "sdk_tracer_provider"},
    )
    assert out == ["True", "True", "True"]


def test_a_given_provider_decides_whatever_the_global_one_is() -> None:
    out = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.trace import NoOpTracerProvider
        from regiment.telemetry import Telemetry

        silent = Telemetry(tracer_provider=NoOpTracerProvider())
        loud = Telemetry(tracer_provider=TracerProvider())
        print(silent.tracing, loud.tracing)
        with loud.run_span("team", "run-1", "goal") as span:
            print(span.is_recording())
        with silent.run_span("team", "run-2", "goal") as span:
            print(span.is_recording())
        trace.set_tracer_provider(TracerProvider())
        print(silent.tracing, loud.tracing)
        """
    )
    assert out == ["False", "True", "True", "False", "False", "True"]


def test_a_no_op_global_provider_keeps_tracing_off() -> None:
    out = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.trace import NoOpTracerProvider
        from regiment.telemetry import Telemetry

        telemetry = Telemetry()
        trace.set_tracer_provider(NoOpTracerProvider())
        print(telemetry.tracing, Telemetry().tracing)
        """
    )
    assert out == ["False", "False"]


def test_a_started_team_traces_its_steps_from_the_run_after_a_provider_is_installed() -> None:
    # A step reads ``traced``, what ``tracing`` last answered; each run asks as it starts.
    out = run_python(
        """
        import json
        import anyio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
        from regiment.hierarchy import Planner, Team, Worker
        from regiment.models import ModelResponse, ScriptedModel, TextPart

        plan = json.dumps({"steps": [{"id": "s1", "description": "one part"}]})

        def brain(request):
            text = plan if request.role == "planner" else "done it"
            return ModelResponse(parts=(TextPart(text=text),), stop_reason="end_turn", model="m")

        model = ScriptedModel(brain)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[Worker(name="w", description="does parts", model=model)],
        )
        exporter = InMemorySpanExporter()

        async def main():
            async with team.start() as running:
                first = await running.run("before")
                provider = TracerProvider()
                provider.add_span_processor(SimpleSpanProcessor(exporter))
                trace.set_tracer_provider(provider)
                second = await running.run("after")
            print(first.status, second.status)
            names = {s.name.split()[0] for s in exporter.get_finished_spans()}
            print("invoke_agent" in names, "chat" in names)

        anyio.run(main)
        """
    )
    assert out == ["completed", "completed", "True", "True"]
