"""Recording outcomes on spans the ``Telemetry`` handle opened (never content)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from regiment.telemetry import _semconv as sc
from regiment.telemetry._content import redact, truncate
from regiment.telemetry._scope import mark_error

__all__ = (
    "UsageLike",
    "record_approval",
    "record_chat_response",
    "record_check",
    "record_replan",
    "record_run_end",
    "record_stale_report",
    "record_step_outcome",
    "record_tool_outcome",
)

_DETAIL_LIMIT = 512


class UsageLike(Protocol):
    """Token counts as ``regiment.models.Usage`` has them (structural, so no import).

    ``input_tokens`` is the uncached input only, as Anthropic reports it.
    """

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


def record_chat_response(
    span: Span,
    *,
    finish_reasons: Sequence[str],
    usage: UsageLike | None = None,
    response_model: str | None = None,
    response_id: str | None = None,
) -> None:
    """Record a model reply on its ``chat`` span.

    ``gen_ai.usage.input_tokens`` is the *whole* input (uncached + cache read +
    cache write), as the conventions ask; the cache parts are recorded as well.

    Args:
        span: the ``chat`` span.
        finish_reasons: why the model stopped (Anthropic: one ``stop_reason``).
        usage: the tokens the call spent.
        response_model: the model that answered.
        response_id: the provider's id for the reply.
    """
    if not span.is_recording():
        return
    # One set_attributes call: the SDK takes its lock and builds a dict per call.
    attributes: dict[str, AttributeValue] = {
        sc.GEN_AI_RESPONSE_FINISH_REASONS: tuple(finish_reasons)
    }
    if response_model:
        attributes[sc.GEN_AI_RESPONSE_MODEL] = response_model
    if response_id:
        attributes[sc.GEN_AI_RESPONSE_ID] = response_id
    if usage is not None:
        total_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] = total_input
        attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
        attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_tokens
        attributes[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_write_tokens
    span.set_attributes(attributes)


def record_tool_outcome(
    span: Span, outcome: str, *, error_type: str | None = None, description: str = ""
) -> None:
    """Record how a tool call ended on its ``execute_tool`` span.

    Args:
        span: the tool span.
        outcome: ``ok``, ``error``, ``timeout``, ``denied``, ``invalid_arguments``, ...
        error_type: when the call failed, a low-cardinality class of the failure;
            the span is then marked ERROR. (The run is not: the model sees the
            error as a tool result and may retry.)
        description: a short reason for a failure (redacted, truncated).
    """
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_TOOL_OUTCOME, outcome)
    if error_type is not None:
        mark_error(span, error_type, description)


def record_approval(span: Span, outcome: str) -> None:
    """Record the answer to an approval request (``approved``, ``denied``, ``timeout``)."""
    if span.is_recording():
        span.set_attribute(sc.REGIMENT_APPROVAL_OUTCOME, outcome)


def record_step_outcome(
    span: Span, outcome: str, *, error_type: str | None = None, description: str = ""
) -> None:
    """Record how a worker's step ended on its ``invoke_agent`` span.

    Args:
        span: the worker's span.
        outcome: ``succeeded``, ``failed``, ``cancelled``, ...
        error_type: when the step failed, its class; the span is then marked ERROR.
        description: a short reason for a failure (redacted, truncated).
    """
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_STEP_OUTCOME, outcome)
    if error_type is not None:
        mark_error(span, error_type, description)


def record_replan(span: Span, *, new_version: int, steps: int | None = None) -> None:
    """Record the plan version a ``replan`` produced (and how many steps it has)."""
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_PLAN_NEW_VERSION, new_version)
    if steps is not None:
        span.set_attribute(sc.REGIMENT_PLAN_STEPS, steps)


def record_check(span: Span, *, passed: bool, detail: str = "") -> None:
    """Record a check's verdict on its ``verify`` span.

    A failed check is an outcome, not an error: the span status stays unset.
    """
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_CHECK_PASSED, passed)
    if detail:
        span.set_attribute(sc.REGIMENT_CHECK_DETAIL, truncate(redact(detail), _DETAIL_LIMIT))


def record_stale_report(
    span: Span, *, step_id: str, report_version: int, current_version: int
) -> None:
    """Add a ``regiment.report.stale_dropped`` event: a report of an old plan version was dropped.

    Put it on the run span (or whichever span was current when the report arrived).
    """
    if not span.is_recording():
        return
    span.add_event(
        sc.STALE_REPORT_EVENT,
        {
            sc.REGIMENT_STEP_ID: step_id,
            sc.REGIMENT_REPORT_VERSION: report_version,
            sc.REGIMENT_PLAN_VERSION: current_version,
        },
    )


def record_run_end(
    span: Span,
    *,
    status: str,
    plan_versions: int,
    stale_dropped: int,
    usage: UsageLike | None = None,
    model_calls: int | None = None,
    tool_calls: int | None = None,
    error_type: str | None = None,
) -> None:
    """Record a run's totals on its root span.

    Args:
        span: the run span.
        status: the final status (``succeeded``, ``failed``, ``cancelled``, ...).
        plan_versions: how many plan versions the run went through.
        stale_dropped: how many stale reports were dropped.
        usage: total tokens over every model call of the run.
        model_calls: how many model calls the run made.
        tool_calls: how many tool calls the run made.
        error_type: when the run failed without raising, the failure's class;
            the span is then marked ERROR.
    """
    if not span.is_recording():
        return
    span.set_attribute(sc.REGIMENT_RUN_STATUS, status)
    span.set_attribute(sc.REGIMENT_PLAN_VERSIONS, plan_versions)
    span.set_attribute(sc.REGIMENT_REPORTS_STALE_DROPPED, stale_dropped)
    if usage is not None:
        span.set_attribute(sc.REGIMENT_USAGE_INPUT_TOKENS, usage.input_tokens)
        span.set_attribute(sc.REGIMENT_USAGE_OUTPUT_TOKENS, usage.output_tokens)
        span.set_attribute(sc.REGIMENT_USAGE_CACHE_READ_TOKENS, usage.cache_read_tokens)
        span.set_attribute(sc.REGIMENT_USAGE_CACHE_WRITE_TOKENS, usage.cache_write_tokens)
    if model_calls is not None:
        span.set_attribute(sc.REGIMENT_USAGE_MODEL_CALLS, model_calls)
    if tool_calls is not None:
        span.set_attribute(sc.REGIMENT_USAGE_TOOL_CALLS, tool_calls)
    if error_type is not None:
        mark_error(span, error_type, f"run ended with status {status}")
