"""``Telemetry``: the one handle the hierarchy uses to open its spans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias, cast, final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, TracerProvider
from opentelemetry.util.types import AttributeValue

from regiment._version import __version__
from regiment.telemetry import _semconv as sc
from regiment.telemetry._attributes import phase_attributes as _phase_attributes
from regiment.telemetry._attributes import plan_attributes as _plan_attributes
from regiment.telemetry._attributes import replan_attributes as _replan_attributes
from regiment.telemetry._attributes import run_attributes as _run_attributes
from regiment.telemetry._attributes import tool_attributes as _tool_attributes
from regiment.telemetry._attributes import verify_attributes as _verify_attributes
from regiment.telemetry._content import capture_from_env
from regiment.telemetry._logs import correlate_logs
from regiment.telemetry._metrics import run_metrics
from regiment.telemetry._open_root import OpenRoot
from regiment.telemetry._propagation import OTelPropagator, headers_for, inject
from regiment.telemetry._record import SpanRecorder
from regiment.telemetry._resumed_root import resumed_root
from regiment.telemetry._scope import _Counted, _SpanScope
from regiment.telemetry._step_ids import GivenSpanIds
from regiment.telemetry._step_spans import NOT_TRACING as _NOT_TRACING
from regiment.telemetry._step_spans import SpanScope, StepSpans

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

_Attributes = Mapping[str, AttributeValue] | None

__all__ = ("PhaseName", "SpanScope", "Telemetry")

PhaseName: TypeAlias = Literal["plan", "verify", "critique", "compress", "synthesize"]
"""The planner's phases that get a span of their own."""

_INSTRUMENTATION = "regiment"
_SCOPE = (
    _INSTRUMENTATION,
    __version__,
)  # (a span's id given: GivenSpanIds, as the journal kept it)


# A marker for an API version whose module no longer has the global we peek at.
_UNKNOWN = object()


def _records(provider: TracerProvider) -> bool:
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


# What every span method returns while nothing records: no attributes are built,
# no context is attached. Reusable: nullcontext holds no state. Each method checks
# ``self.tracing`` itself (no wrapper forwarding *args and **kwargs on every span).


@final
class Telemetry(StepSpans):
    """Opens regiment's spans and records what happened on them.

    One instance serves a whole team (and any number of concurrent runs): it holds
    no per-run state. Every ``*_span`` method returns a context manager that starts
    the span, makes it current, yields it and ends it; an ``Exception`` escaping the
    block marks it ERROR with ``error.type``, while cancellation (asyncio or trio)
    only sets ``regiment.cancelled`` (and its event) and leaves the status unset.
    Message content is recorded only when capture is on, redacted and truncated.

    Args:
        tracer_provider: the provider to use; ``None`` uses the global one
            (resolved lazily, so ``configure_tracing`` may run later). This
            class never installs a global provider.
        capture_content: record message content; ``None`` reads
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (default off).
        content_limit: the most characters of one content attribute.
        meter_provider: where metrics go; ``None`` uses the global one if one is
            installed by then (``configure_tracing`` installs one), else records none.

    Raises:
        ConfigError: ``content_limit`` is not positive, or the capture variable
            holds neither true nor false.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        capture_content: bool | None = None,
        content_limit: int = 4096,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.recorder = SpanRecorder(
            capture=capture_from_env() if capture_content is None else capture_content,
            limit=content_limit,
        )
        self._provider = tracer_provider
        # A global provider, once installed, is final: "recording" is remembered (#22).
        self._provider_records = tracer_provider is not None and _records(tracer_provider)
        self._tracer = trace.get_tracer(
            _INSTRUMENTATION, __version__, tracer_provider=tracer_provider
        )
        self.propagator = OTelPropagator()  # for the actor runtime (``ContextPropagator``)
        self._given = GivenSpanIds(lambda: self.tracer_provider.get_tracer(*_SCOPE))
        correlate_logs()  # records of the `regiment` loggers get trace_id / span_id
        # None while nothing records metrics: then the hierarchy does no metric work at all.
        self.metrics = run_metrics(meter_provider, __version__)
        # What ``tracing`` last said, read with no call on a step's path; asking ``tracing``
        # refreshes it, as every run does when it opens its span (a later provider counts).
        self.traced = self.tracing

    @property
    def tracing(self) -> bool:
        """Whether spans are recorded: ``False`` while the provider is a no-op one
        (the global provider before an application installs one)."""
        if self._provider_records or self._provider is not None:
            return self._provider_records
        # None: nothing installed yet (asking the API would read os.environ each time).
        installed = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
        if installed is None:  # still nothing: asked again next time (checked ~9 times a run)
            return False
        self._provider_records = self.traced = _records_once_installed(installed)
        return self._provider_records

    @property
    def capture_content(self) -> bool:
        """Whether message content is recorded."""
        return self.recorder.capture

    @property
    def content_limit(self) -> int:
        """The most characters kept of one content attribute."""
        return self.recorder.limit

    @property
    def tracer_provider(self) -> TracerProvider:
        """The provider spans go to (the global one when none was given).

        Hand it to other instrumented clients (e.g. the Anthropic SDK's
        ``open_telemetry={"tracer_provider": ...}``) so their spans land in the same trace.
        """
        return self._provider if self._provider is not None else trace.get_tracer_provider()

    @property
    def tracer(self) -> trace.Tracer:
        """The tracer the spans are started with."""
        return self._tracer

    def run_span(
        self,
        team: str,
        run_id: str,
        goal: str,
        *,
        provider: str | None = None,
        session_id: str | None = None,
        resume: tuple[int, str | None] | None = None,
        reopen: OpenRoot | None = None,
        span_id: str | None = None,
    ) -> SpanScope:
        """The root span of one run: ``invoke_agent {team}``; its parent is the current
        context (a caller's span); finish it with ``recorder.run_end``.

        ``provider`` is the planner model's; ``session_id`` becomes ``gen_ai.conversation.id``
        (left out when ``None``); of the goal only its length is kept. With metrics on, the run
        counts in ``regiment.runs.active`` while the span is open. A resumed run passes
        ``resume`` (which resume, from 1; its first root's ``traceparent``): the span goes on in
        that trace, under and linked to the first root (and to a current span of another trace:
        its resumer); ``reopen``: a killed process's root; ``span_id``: see ``chosen_child``."""
        scope = _NOT_TRACING
        if self.tracing:
            attributes = _run_attributes(team, run_id, goal, provider, session_id)
            scope = _root(self, f"invoke_agent {team}", attributes, (resume, reopen, span_id))
        return scope if self.metrics is None else _Counted(scope, self.metrics.active_run(team))

    def plan_span(
        self,
        planner: str,
        *,
        plan_version: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        end_on_exit: bool = True,
    ) -> SpanScope:
        """Planning: ``plan {planner}``; the planner's ``chat`` span goes inside.

        Args:
            planner: the planner's name.
            plan_version: the version this planning produces, if known up front.
            attributes: extra attributes (e.g. ``semconv.REGIMENT_ROUND``).
            end_on_exit: ``False`` keeps the span open after the block (until
                ``span.end()``), e.g. while the plan the reply gave is read.
        """
        if not self.tracing:
            return _NOT_TRACING
        base = _plan_attributes(planner, plan_version)
        base.update(attributes or {})
        return _open(self, f"plan {planner}", attributes=base, end_on_exit=end_on_exit)

    def replan_span(
        self, *, old_version: int, reason: str, planner: str | None = None, end_on_exit: bool = True
    ) -> SpanScope:
        """Replacing the plan's tail: ``plan {planner}`` (``regiment.plan.replan``); add the
        result with ``recorder.replan``. The reason: only with capture on, else its length."""
        replanning = (planner, old_version, reason)
        return _replan(self, replanning, end_on_exit) if self.tracing else _NOT_TRACING

    def verify_span(
        self, step_id: str, *, check: str | None = None, plan_version: int | None = None
    ) -> SpanScope:
        """Checking one step's output: ``verify``; add the verdict with ``recorder.check``."""
        if not self.tracing:
            return _NOT_TRACING
        attributes = _verify_attributes(step_id, check, plan_version)
        return _open(self, sc.SPAN_VERIFY, attributes=attributes)

    def phase_span(
        self, name: PhaseName, *, attributes: _Attributes = None, end_on_exit: bool = True
    ) -> SpanScope:
        """Any planner phase by name (``critique``, ``compress``, ``synthesize``, ...):
        ``name`` is the span name; ``attributes`` are keyed by the constants in
        ``semconv``; ``end_on_exit`` as for ``plan_span``."""
        if not self.tracing:
            return _NOT_TRACING
        base = _phase_attributes(name, attributes)  # gen_ai.operation.name, but not verify's
        return _open(self, name, attributes=base, end_on_exit=end_on_exit)

    def tool_span(
        self,
        tool_name: str,
        call_id: str,
        *,
        tool_type: str = sc.TOOL_TYPE_FUNCTION,
        agent_name: str | None = None,
        description: str | None = None,
    ) -> SpanScope:
        """One tool call: ``execute_tool {tool_name}``; finish with ``recorder.tool_outcome``."""
        if not self.tracing:
            return _NOT_TRACING
        attributes = _tool_attributes(tool_name, call_id, tool_type, agent_name, description)
        return _open(self, f"execute_tool {tool_name}", attributes=attributes)

    def span(self, name: str, attributes: _Attributes = None) -> SpanScope:
        """Any other span (``regiment.guardrail``, ``regiment.approval``), recorded alike."""
        return _open(self, name, attributes=attributes) if self.tracing else _NOT_TRACING

    def inject(self) -> dict[str, str]:
        """The current context as W3C ``traceparent`` / ``tracestate`` headers."""
        return inject()

    def headers_for(self, span: Span) -> dict[str, str]:
        """Headers that make ``span`` the parent of whatever receives them."""
        return headers_for(span)

    def __repr__(self) -> str:
        return f"Telemetry(tracing={self.tracing})"


def _root(
    telemetry: Telemetry,
    name: str,
    attributes: dict[str, AttributeValue],
    resumed: tuple[tuple[int, str | None] | None, OpenRoot | None, str | None],
) -> SpanScope:
    """A run's root span (``resumed``: ``run_span``'s resume, reopen and span id)."""
    resume, reopen, span_id = resumed
    if resume is not None:
        return resumed_root(telemetry, name, attributes, resume, reopen)
    tracer = telemetry.tracer  # its id chosen and journaled first: a nested run's
    if span_id is not None:
        tracer = telemetry._given.tracer(tracer, span_id)
    capture = telemetry.recorder.capture
    return _SpanScope(tracer, name, SpanKind.INTERNAL, attributes, None, capture)


def _replan(
    telemetry: Telemetry, replanning: tuple[str | None, int, str], end_on_exit: bool
) -> SpanScope:
    """A replan's span: ``plan {planner}`` (``plan`` with no planner named), as the
    conventions name a planning phase's."""
    planner, old_version, reason = replanning
    capture = telemetry.capture_content
    attributes = _replan_attributes(planner, old_version, reason, capture=capture)
    name = "plan" if planner is None else f"plan {planner}"
    return _open(telemetry, name, attributes=attributes, end_on_exit=end_on_exit)


def _records_once_installed(installed: object) -> bool:
    # (A provider named by OTEL_PYTHON_TRACER_PROVIDER was installed when
    # Telemetry.__init__ got its tracer.)
    provider = trace.get_tracer_provider() if installed is _UNKNOWN else installed
    return _records(cast("TracerProvider", provider))


def _open(
    telemetry: Telemetry,
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, AttributeValue] | None = None,
    context: Context | None = None,
    end_on_exit: bool = True,
) -> SpanScope:
    capture = telemetry.recorder.capture
    return _SpanScope(telemetry.tracer, name, kind, attributes, context, capture, None, end_on_exit)
