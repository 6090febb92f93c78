"""One version: ``pyproject.toml``'s, ``regiment.__version__``, the installed
package's metadata and the instrumentation scope every span is recorded under."""

from __future__ import annotations

import importlib.metadata
import tomllib
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import regiment
from regiment import Telemetry

ROOT = Path(__file__).resolve().parents[1]


class _Kept(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def test_the_version_is_pyprojects_and_the_installed_packages() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        declared = tomllib.load(file)["project"]["version"]
    assert regiment.__version__ == declared
    assert importlib.metadata.version("regiment") == declared


def test_spans_are_recorded_under_the_regiment_scope_and_its_version() -> None:
    kept = _Kept()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    telemetry = Telemetry(provider)
    with telemetry.run_span("team", "run-1", "a goal"):
        pass
    [span] = kept.spans
    assert span.instrumentation_scope is not None
    assert (span.instrumentation_scope.name, span.instrumentation_scope.version) == (
        "regiment",
        regiment.__version__,
    )
