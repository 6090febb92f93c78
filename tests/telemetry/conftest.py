"""An in-memory tracer provider for the telemetry tests (never the global one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.telemetry import SpanCollector, Telemetry


@pytest.fixture
def collector() -> SpanCollector:
    return SpanCollector()


@pytest.fixture
def provider(collector: SpanCollector) -> Iterator[TracerProvider]:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    yield provider
    provider.shutdown()


@pytest.fixture
def telemetry(provider: TracerProvider, monkeypatch: pytest.MonkeyPatch) -> Telemetry:
    # The default must come from the environment; make sure it is the real default.
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    return Telemetry(provider)
