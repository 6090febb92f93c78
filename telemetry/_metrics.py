"""regiment's metrics: the GenAI client histograms and the run's own counters.

``Telemetry.metrics`` is a :class:`RunMetrics` when a meter provider records
(else ``None``, and the hierarchy does no metric work at all). Names, units and
bucket boundaries follow the GenAI semantic conventions for
``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, final

from regiment.telemetry import _semconv as sc

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.util.types import AttributeValue

__all__ = ("RunMetrics", "global_meter_provider", "meter_provider_records", "run_metrics")

_METRICS_API = "opentelemetry.metrics"
_PROVIDER_VARIABLE = "OTEL_PYTHON_METER_PROVIDER"


def global_meter_provider() -> MeterProvider | None:
    """The global meter provider, or ``None`` when there can be none yet: until the
    metrics API is imported nothing has installed one, and it makes one itself only
    from ``OTEL_PYTHON_METER_PROVIDER``. So a run without metrics does not load the
    API (~5 ms) to learn that it records nothing."""
    if _METRICS_API not in sys.modules and not os.environ.get(_PROVIDER_VARIABLE):
        return None
    from opentelemetry import metrics

    return metrics.get_meter_provider()


# The advisory boundaries the GenAI conventions give for the two client histograms.
_TOKEN_BUCKETS: Final = tuple(float(4**n) for n in range(14))  # 1 .. 67108864
_DURATION_BUCKETS: Final = tuple(0.01 * 2**n for n in range(14))  # 0.01 .. 81.92 s


def run_metrics(provider: MeterProvider | None, version: str | None) -> RunMetrics | None:
    """The instruments of a ``Telemetry`` given ``provider`` (``None``: the global one),
    or ``None`` while that provider records nothing."""
    meters = global_meter_provider() if provider is None else provider
    if meters is None or not meter_provider_records(meters):
        return None
    return RunMetrics(meters, version)


def meter_provider_records(provider: MeterProvider) -> bool:
    """Whether ``provider`` is a real one (not the API's no-op or its placeholder)."""
    from opentelemetry import metrics

    # The API's placeholder until an application installs a provider; it has no public name.
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    return not isinstance(provider, metrics.NoOpMeterProvider | _ProxyMeterProvider)


@final
class RunMetrics:
    """The instruments regiment records; one instance per ``Telemetry``."""

    def __init__(self, provider: MeterProvider, version: str | None) -> None:
        meter = provider.get_meter("regiment", version)
        self._tokens = meter.create_histogram(
            sc.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Tokens used per model call, by token type",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            sc.METRIC_OPERATION_DURATION,
            unit="s",
            description="Duration of model calls",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._steps = meter.create_counter(
            sc.METRIC_STEPS, unit="{step}", description="Steps ended, by outcome"
        )
        self._replans = meter.create_counter(
            sc.METRIC_REPLANS, unit="{replan}", description="Plans replaced by a new version"
        )
        self._stale = meter.create_counter(
            sc.METRIC_STALE_REPORTS,
            unit="{report}",
            description="Step reports of an old plan version, dropped",
        )
        self._tool_duration = meter.create_histogram(
            sc.METRIC_TOOL_DURATION,
            unit="s",
            description="Duration of tool calls",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._active = meter.create_up_down_counter(
            sc.METRIC_RUNS_ACTIVE, unit="{run}", description="Runs under way"
        )

    def model_call(
        self,
        attributes: dict[str, AttributeValue],
        seconds: float,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        error_type: str | None = None,
    ) -> None:
        """One model call: its duration, and its tokens when it answered (or spent
        them on a reply that failed it, such as a refusal).

        Args:
            attributes: ``gen_ai.operation.name``, ``gen_ai.provider.name``,
                ``gen_ai.request.model`` (and ``server.*``, ``gen_ai.response.model``).
            seconds: how long the call took.
            input_tokens: every input token (cached ones included).
            output_tokens: the generated tokens.
            error_type: the failure's type, when the call failed.
        """
        if error_type is not None:
            self._duration.record(seconds, {**attributes, sc.ERROR_TYPE: error_type})
        else:
            self._duration.record(seconds, attributes)
        if input_tokens is not None:
            self._tokens.record(input_tokens, {**attributes, sc.GEN_AI_TOKEN_TYPE: "input"})
        if output_tokens is not None:
            self._tokens.record(output_tokens, {**attributes, sc.GEN_AI_TOKEN_TYPE: "output"})

    def step(self, agent: str, outcome: str) -> None:
        """A step ended with ``outcome`` (its status) on worker ``agent``."""
        self._steps.add(1, {sc.GEN_AI_AGENT_NAME: agent, sc.REGIMENT_STEP_OUTCOME: outcome})

    def replan(self, team: str) -> None:
        """A plan was replaced."""
        self._replans.add(1, {sc.GEN_AI_AGENT_NAME: team})

    def stale_report(self) -> None:
        """A report of an old plan version was dropped."""
        self._stale.add(1)

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        """A tool call ended with ``outcome`` after ``seconds``."""
        self._tool_duration.record(
            seconds, {sc.GEN_AI_TOOL_NAME: tool, sc.REGIMENT_TOOL_OUTCOME: outcome}
        )

    @contextmanager
    def active_run(self, team: str) -> Iterator[None]:
        """Count a run as under way while the block runs."""
        attributes = {sc.GEN_AI_AGENT_NAME: team}
        self._active.add(1, attributes)
        try:
            yield
        finally:
            self._active.add(-1, attributes)
