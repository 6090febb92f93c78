"""``regiment serve --trace jaeger`` and ``regiment mcp --trace jaeger``: the served runs'
spans and metrics over OTLP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from regiment.cli._trace_report import SDK_DISABLED, collector_hint
from regiment.config import TeamConfig, trace_replicas
from regiment.telemetry import Telemetry, TracingHandle, configure_tracing, redact

__all__ = ("serve_tracing",)


@contextmanager
def serve_tracing(
    mode: str, config: TeamConfig, stderr: TextIO
) -> Iterator[tuple[TeamConfig, Telemetry | None]]:
    """The team's config and telemetry for ``mode`` (``jaeger`` or ``none``), for as long as
    the server runs; then the last spans are flushed, and a failed export is said once."""
    if mode != "jaeger":
        yield config, None
        return
    handle = configure_tracing(set_global=False)
    try:
        yield _traced(handle, config, stderr)
    finally:
        handle.shutdown()  # the last runs' spans leave before the command exits
        if handle.export_failure is not None:
            print(
                f"regiment: could not export traces to {redact(handle.endpoint or '')}: "
                f"{handle.export_failure}; {collector_hint(handle.endpoint or '')}",
                file=stderr,
            )


def _traced(
    handle: TracingHandle, config: TeamConfig, stderr: TextIO
) -> tuple[TeamConfig, Telemetry | None]:
    if not handle.enabled:
        print(SDK_DISABLED, file=stderr)
        return config, None
    shown = redact(handle.endpoint or "")  # without a URL's password
    print(f"regiment: tracing each run to {shown} (OTLP/HTTP)", file=stderr)
    if handle.endpoint is not None:
        config = trace_replicas(config, handle.endpoint)  # Ray replicas' spans go there too
    telemetry = Telemetry(handle.provider, meter_provider=handle.meter_provider)
    return config, telemetry
