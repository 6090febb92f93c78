"""What the root span of a run records when the run ends."""

from __future__ import annotations

from opentelemetry.trace import Span

from regiment.errors import RunCancelled, RunError
from regiment.hierarchy.run._channel import RunChannel
from regiment.telemetry import Telemetry, error_type

__all__ = ("record_end",)


def record_end(telemetry: Telemetry, span: Span, channel: RunChannel) -> None:
    """Finish the run's root span with how the run ended and what it spent."""
    error: RunError | None = None
    result = channel.result
    if result is None:
        error = channel.error or RunCancelled("the run ended without a result")
        result = channel.tally  # what the run did before it failed, if it got that far
    status = "failed" if error is not None or result is None else result.status
    telemetry.recorder.run_end(
        span,
        status=status,
        plan_versions=len(result.plans) if result else 0,
        stale_dropped=result.stale_reports_dropped if result else 0,
        usage=result.usage if result else None,
        model_calls=result.model_calls if result else None,
        tool_calls=result.tool_calls if result else None,
        steps=len(result.steps) if result else None,
        error_type=None if error is None else error_type(error),
    )
