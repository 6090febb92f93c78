"""A step's two spans, ``invoke_agent`` and ``chat``: ``Telemetry``'s methods on every
traced step's path, each opened with no helper call (issue #22, row 6)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, TypeAlias

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from regiment.telemetry import _semconv as sc
from regiment.telemetry._attributes import agent_attributes as _agent_attributes
from regiment.telemetry._propagation import extract_context
from regiment.telemetry._record import SpanRecorder
from regiment.telemetry._scope import _SpanScope
from regiment.telemetry._step_ids import STEP_SPAN_HEADER, GivenSpanIds

__all__ = ("NOT_TRACING", "SpanScope", "StepSpans")

SpanScope: TypeAlias = AbstractContextManager[Span]
"""What every span method returns: ``with telemetry.x_span(...) as span:``."""

NOT_TRACING: AbstractContextManager[Span] = nullcontext(trace.INVALID_SPAN)
"""What a span method returns while nothing is traced."""


class StepSpans:
    """``Telemetry.agent_span`` and ``Telemetry.chat_span`` (``Telemetry`` is the class)."""

    __slots__ = ()

    recorder: SpanRecorder
    traced: bool
    _tracer: trace.Tracer
    _given: GivenSpanIds

    if TYPE_CHECKING:

        @property
        def tracing(self) -> bool: ...

    def agent_span(
        self,
        agent_name: str,
        *,
        parent_headers: Mapping[str, str] | None = None,
        run_id: str | None = None,
        step_id: str | None = None,
        plan_version: int | None = None,
        attempt: int | None = None,
        agent_id: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> SpanScope:
        """A worker doing one step: ``invoke_agent {agent_name}``.

        ``parent_headers`` (W3C headers from the step's envelope), when given,
        alone decide the parent, so a worker serving several runs links each
        step to its own run; ``None`` uses the current context. The other arguments
        become ``regiment.*`` / ``gen_ai.*`` attributes (``agent_id``: a hosted agent's).
        """
        if not (self.traced or self.tracing):  # traced: no property call on a step's path
            return NOT_TRACING
        base = _agent_attributes(agent_name, agent_id, run_id, step_id, plan_version, attempt)
        if attributes:
            base.update(attributes)
        parent = None if parent_headers is None else extract_context(parent_headers)
        given = None if parent_headers is None else parent_headers.get(STEP_SPAN_HEADER)
        tracer = self._tracer if given is None else self._given.tracer(self._tracer, given)
        name, capture = f"invoke_agent {agent_name}", self.recorder.capture  # no _open hop
        return _SpanScope(tracer, name, SpanKind.INTERNAL, base, parent, capture)

    def chat_span(
        self,
        model: str,
        provider: str,
        *,
        agent_name: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        server: tuple[str, int | None] | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> SpanScope:
        """One model call: ``chat {model}`` (kind CLIENT); finish with ``recorder.chat_response``.

        The arguments become ``gen_ai.request.*``, ``gen_ai.provider.name``,
        ``gen_ai.agent.name`` and ``server.address`` / ``server.port`` (host, port);
        ``attributes`` adds more at the start (e.g. the applied ``gen_ai.request.*``
        settings), so they need no second call on the span.
        """
        if not (self.traced or self.tracing):  # as agent_span's
            return NOT_TRACING
        # Built here, in one dict (no helper calls: this is every model call's path).
        base: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
            sc.GEN_AI_PROVIDER_NAME: provider,
            sc.GEN_AI_REQUEST_MODEL: model,
        }
        if agent_name is not None:
            base[sc.GEN_AI_AGENT_NAME] = agent_name
        if max_tokens is not None:
            base[sc.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
        if temperature is not None:
            base[sc.GEN_AI_REQUEST_TEMPERATURE] = temperature
        if server is not None:  # the model API's host, and its port when known
            base[sc.SERVER_ADDRESS] = server[0]
            if server[1] is not None:
                base[sc.SERVER_PORT] = server[1]
        if attributes:
            base.update(attributes)
        name = f"chat {model}"  # the scope made here, as agent_span's
        return _SpanScope(self._tracer, name, SpanKind.CLIENT, base, None, self.recorder.capture)
