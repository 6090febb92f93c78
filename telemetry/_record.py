"""Recording outcomes on spans the ``Telemetry`` handle opened (never content).

``SpanRecorder`` is reached as ``telemetry.recorder``: the hierarchy's engine
records plan, step, tool and run outcomes through it; applications do not need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, final

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from regiment.errors import ConfigError, RunCancelled
from regiment.telemetry import _semconv as sc
from regiment.telemetry._content import to_attribute_text
from regiment.telemetry._genai import GenAIValue, fit_json, text_part
from regiment.telemetry._scope import exception_event, mark_error, record_exception
from regiment.telemetry._verdicts import VerdictRecorder

__all__ = ("SpanRecorder", "UsageLike")


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


@final
class SpanRecorder(VerdictRecorder):
    """Records what happened on regiment's spans: outcomes always, message content
    (prompts, replies, tool arguments and results) only when capture is on,
    redacted and cut to ``limit`` characters. Each call is a no-op when the span
    is not recording."""

    def __init__(self, *, capture: bool, limit: int) -> None:
        if limit <= 0:
            raise ConfigError(f"content_limit must be a positive number of characters, got {limit}")
        self.capture = capture
        self.limit = limit

    # --- content (opt-in) -----------------------------------------------------

    def chat_input(self, span: Span, *, system: str = "", messages: Sequence[GenAIValue]) -> None:
        """Record a model call's system prompt and messages, if capture is on.

        Args:
            span: the ``chat`` span.
            system: the system instructions (empty: not recorded); they become
                ``gen_ai.system_instructions``, a list of one ``text`` part.
            messages: the conversation sent, as ``chat_message`` values
                (``regiment.telemetry.genai``); each part is cut on its own so the
                attribute stays valid JSON.
        """
        if not self._recording(span):
            return
        if system:
            self._set_json(span, sc.GEN_AI_SYSTEM_INSTRUCTIONS, [text_part(system)])
        self._set_json(span, sc.GEN_AI_INPUT_MESSAGES, list(messages))

    def chat_output(self, span: Span, messages: Sequence[GenAIValue]) -> None:
        """Record what the model answered (``output_message`` values), if capture is on."""
        if self._recording(span):
            self._set_json(span, sc.GEN_AI_OUTPUT_MESSAGES, list(messages))

    def tool_arguments(self, span: Span, arguments: object) -> None:
        """Record the arguments a tool was called with, if capture is on."""
        if self._recording(span):
            self._set_text(span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments)

    def tool_result(self, span: Span, result: object) -> None:
        """Record what a tool returned, if capture is on."""
        if self._recording(span):
            self._set_text(span, sc.GEN_AI_TOOL_CALL_RESULT, result)

    def _set_json(self, span: Span, key: str, value: GenAIValue) -> None:
        text = fit_json(value, self.limit, messages=True)
        if text is not None:
            span.set_attribute(key, text)

    def _set_text(self, span: Span, key: str, value: object) -> None:
        span.set_attribute(key, to_attribute_text(value, self.limit))

    def _recording(self, span: Span) -> bool:
        # The flag first: with capture off nothing is formatted at all.
        return self.capture and span.is_recording()

    # --- outcomes ---------------------------------------------------------------

    def chat_response(
        self,
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
        attributes: dict[str, AttributeValue] = {}
        if finish_reasons:  # none for a call that failed
            attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = tuple(finish_reasons)
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
            if micro := getattr(usage, "micro_usd", 0):  # priced: no _cost call when not
                attributes[sc.REGIMENT_USAGE_COST_USD] = micro / 1_000_000
        span.set_attributes(attributes)

    def tool_outcome(
        self,
        span: Span,
        outcome: str,
        *,
        error_type: str | None = None,
        description: str = "",
        raised: bool = False,
    ) -> None:
        """Record how a tool call ended on its ``execute_tool`` span.

        Args:
            span: the tool span.
            outcome: ``ok``, ``error``, ``timeout``, ``denied``, ``invalid_arguments``, ...
            error_type: when the call failed, a low-cardinality class of the failure;
                the span is then marked ERROR. (The run is not: the model sees the
                error as a tool result and may retry.)
            description: a short reason for a failure (redacted, truncated).
            raised: the tool's body raised ``error_type`` (``description`` its message):
                the span also gets an ``exception`` event.
        """
        if not span.is_recording():
            return
        span.set_attribute(sc.REGIMENT_TOOL_OUTCOME, outcome)
        if error_type is not None:
            if raised:
                exception_event(span, error_type, description, capture=self.capture)
            mark_error(span, error_type, description, capture=self.capture)

    def step_outcome(
        self,
        span: Span,
        outcome: str,
        *,
        error_type: str | None = None,
        description: str = "",
        raised: bool = False,
    ) -> None:
        """Record how a worker's step ended on its ``invoke_agent`` span.

        Args:
            span: the worker's span.
            outcome: ``succeeded``, ``failed``, ``cancelled``, ...
            error_type: when the step failed, its class; the span is then marked ERROR.
            description: a short reason for a failure (redacted, truncated).
            raised: the step failed because ``error_type`` (an exception's qualified type)
                was raised in it: the span also gets its ``exception`` event and
                ``regiment.error.code``, as a span the exception left would, so a reader
                of the step sees why without finding the child span that raised it.
        """
        if not span.is_recording():
            return
        span.set_attribute(sc.REGIMENT_STEP_OUTCOME, outcome)
        if error_type is not None:
            if raised:
                code = error_type.rpartition(".")[2]  # as error_code() names an exception
                exception_event(span, error_type, description, capture=self.capture, code=code)
                span.set_attribute(sc.REGIMENT_ERROR_CODE, code)
            mark_error(span, error_type, description, capture=self.capture)

    def failure(self, span: Span, exc: BaseException) -> None:
        """Mark ``span`` ERROR for an exception that was caught inside it (a failed
        model call whose phase goes on to end the run): ``error.type`` is the
        exception's type; its message and stack only when capture is on."""
        record_exception(span, exc, capture=self.capture)

    def plan_steps(self, span: Span, steps: int) -> None:
        """Record how many steps the plan a ``plan`` call (a replan's too) gave has (all
        of them: a replan's kept steps too), as read, before any plan guardrail."""
        if span.is_recording():
            span.set_attribute(sc.REGIMENT_PLAN_STEPS, steps)

    def stale_report(
        self, span: Span, *, step_id: str, report_version: int, current_version: int
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

    def run_end(
        self,
        span: Span,
        *,
        status: str,
        plan_versions: int,
        stale_dropped: int,
        usage: UsageLike | None = None,
        model_calls: int | None = None,
        tool_calls: int | None = None,
        steps: int | None = None,
        error_type: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Record a run's totals on its root span (a failed run's too: what it did).

        Args:
            span: the run span.
            status: the final status (``succeeded``, ``failed``, ``cancelled``, ...).
            plan_versions: how many plan versions the run went through.
            stale_dropped: how many stale reports were dropped.
            usage: total tokens over every model call of the run.
            model_calls: how many model calls the run made.
            tool_calls: how many tool calls the run made.
            steps: how many step reports the run received.
            error_type: when the run failed without an exception to show, the
                failure's class; the span is then marked ERROR.
            error: the exception the run failed with (a ``RunError``); the span is
                then marked ERROR as any span an exception ended: ``error.type``,
                ``regiment.error.code`` and an ``exception`` event (the message and
                stack only when capture is on). It wins over ``error_type``. A
                ``RunCancelled`` only sets ``regiment.cancelled``.
        """
        if not span.is_recording():
            return
        # One call: each set_attribute takes the span's lock and builds a dict of its own.
        attributes: dict[str, AttributeValue] = {
            sc.REGIMENT_RUN_STATUS: status,
            sc.REGIMENT_PLAN_VERSIONS: plan_versions,
            sc.REGIMENT_REPORTS_STALE_DROPPED: stale_dropped,
        }
        if usage is not None:
            _run_usage(attributes, usage)
        if model_calls is not None:
            attributes[sc.REGIMENT_USAGE_MODEL_CALLS] = model_calls
        if tool_calls is not None:
            attributes[sc.REGIMENT_USAGE_TOOL_CALLS] = tool_calls
        if steps is not None:
            attributes[sc.REGIMENT_RUN_STEPS] = steps
        if isinstance(error, RunCancelled):  # no failure: the status stays unset
            attributes[sc.REGIMENT_CANCELLED], error = True, None
        span.set_attributes(attributes)
        if error is not None:
            record_exception(span, error, capture=self.capture)
        elif error_type is not None:
            mark_error(span, error_type, f"run ended with status {status}", capture=self.capture)


def _cost(attributes: dict[str, AttributeValue], usage: UsageLike) -> None:
    """``regiment.usage.cost_usd``, when ``usage`` was priced (its ``micro_usd``)."""
    if micro := getattr(usage, "micro_usd", 0):
        attributes[sc.REGIMENT_USAGE_COST_USD] = micro / 1_000_000


def _run_usage(attributes: dict[str, AttributeValue], usage: UsageLike) -> None:
    """A whole run's usage as its span's ``regiment.usage.*`` attributes."""
    attributes[sc.REGIMENT_USAGE_INPUT_TOKENS] = usage.input_tokens
    attributes[sc.REGIMENT_USAGE_OUTPUT_TOKENS] = usage.output_tokens
    attributes[sc.REGIMENT_USAGE_CACHE_READ_TOKENS] = usage.cache_read_tokens
    attributes[sc.REGIMENT_USAGE_CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    _cost(attributes, usage)
