"""A loopback OTLP/HTTP trace and metrics receiver for tests: the real exporters post to it.

Usage::

    with OtlpReceiver() as receiver:
        handle = configure_tracing(endpoint=receiver.endpoint, set_global=False)
        ...
        handle.force_flush()  # returns once the POST has been answered
        spans = receiver.spans()

The handler stores the decoded spans *before* it answers, so once the
exporter's ``force_flush`` returns, every exported span is visible here; no
waiting or polling is needed.
"""

from __future__ import annotations

import dataclasses
import gzip
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import ClassVar, final

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = (
    "AttrValue",
    "OtlpReceiver",
    "ReceivedLink",
    "ReceivedLog",
    "ReceivedMetric",
    "ReceivedPoint",
    "ReceivedSpan",
)


@dataclass(frozen=True, kw_only=True)
class ReceivedLog:
    """One log record as it arrived over the wire."""

    body: str
    severity: str
    trace_id: str
    span_id: str
    attributes: Mapping[str, AttrValue]
    scope: str


AttrValue = str | bool | int | float | tuple["AttrValue", ...] | None


@dataclass(frozen=True, kw_only=True)
class ReceivedSpan:
    """One span as it arrived over the wire."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: int
    attributes: Mapping[str, AttrValue]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    events: tuple[tuple[str, Mapping[str, AttrValue]], ...]
    resource: Mapping[str, AttrValue]
    scope: str
    links: tuple[ReceivedLink, ...] = ()
    start: int = 0  # start and end, nanoseconds since the epoch
    end: int = 0
    event_times: tuple[int, ...] = ()  # each event's time, in the order of ``events``


@dataclass(frozen=True, kw_only=True)
class ReceivedLink:
    """One span link as it arrived over the wire."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, AttrValue]


@dataclass(frozen=True, kw_only=True)
class ReceivedPoint:
    """One data point: a sum's value, or a histogram's count, sum and buckets."""

    attributes: Mapping[str, AttrValue]
    value: float  # the sum's value, or the histogram's sum
    count: int = 0  # histograms only
    bounds: tuple[float, ...] = ()  # histograms only


@dataclass(frozen=True, kw_only=True)
class ReceivedMetric:
    """One metric of one export request."""

    name: str
    unit: str
    kind: str  # "sum", "histogram" or "gauge"
    monotonic: bool
    points: tuple[ReceivedPoint, ...]
    scope: str
    resource: Mapping[str, AttrValue] = dataclasses.field(default_factory=dict)


def decode_metrics(request: ExportMetricsServiceRequest) -> list[ReceivedMetric]:
    """Flatten a metrics export request."""
    found: list[ReceivedMetric] = []
    for resource_metrics in request.resource_metrics:
        resource = _attributes(list(resource_metrics.resource.attributes))
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data") or ""
                points: list[ReceivedPoint] = []
                if kind == "histogram":
                    for p in metric.histogram.data_points:
                        points.append(
                            ReceivedPoint(
                                attributes=_attributes(list(p.attributes)),
                                value=p.sum,
                                count=p.count,
                                bounds=tuple(p.explicit_bounds),
                            )
                        )
                elif kind in ("sum", "gauge"):
                    for n in getattr(metric, kind).data_points:
                        number = n.as_int if n.WhichOneof("value") == "as_int" else n.as_double
                        points.append(
                            ReceivedPoint(attributes=_attributes(list(n.attributes)), value=number)
                        )
                found.append(
                    ReceivedMetric(
                        name=metric.name,
                        unit=metric.unit,
                        kind=kind,
                        monotonic=kind == "sum" and metric.sum.is_monotonic,
                        points=tuple(points),
                        scope=scope_metrics.scope.name,
                        resource=resource,
                    )
                )
    return found


def decode_logs(request: ExportLogsServiceRequest) -> list[ReceivedLog]:
    """Flatten a logs export request."""
    return [
        ReceivedLog(
            body=str(_value(record.body)),
            severity=record.severity_text,
            trace_id=record.trace_id.hex(),
            span_id=record.span_id.hex(),
            attributes=_attributes(list(record.attributes)),
            scope=scope_logs.scope.name,
        )
        for resource_logs in request.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def _value(value: AnyValue) -> AttrValue:
    match value.WhichOneof("value"):
        case "string_value":
            return value.string_value
        case "bool_value":
            return value.bool_value
        case "int_value":
            return value.int_value
        case "double_value":
            return value.double_value
        case "array_value":
            return tuple(_value(item) for item in value.array_value.values)
        case _:
            return None


def _attributes(pairs: list[KeyValue]) -> dict[str, AttrValue]:
    return {pair.key: _value(pair.value) for pair in pairs}


def decode(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    """Flatten an export request into spans."""
    found: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(list(resource_spans.resource.attributes))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex() or None,
                        kind=span.kind,
                        attributes=_attributes(list(span.attributes)),
                        status_code=span.status.code,
                        status_message=span.status.message,
                        events=tuple(
                            (event.name, _attributes(list(event.attributes)))
                            for event in span.events
                        ),
                        resource=resource,
                        scope=scope_spans.scope.name,
                        start=span.start_time_unix_nano,
                        end=span.end_time_unix_nano,
                        event_times=tuple(event.time_unix_nano for event in span.events),
                        links=tuple(
                            ReceivedLink(
                                trace_id=link.trace_id.hex(),
                                span_id=link.span_id.hex(),
                                attributes=_attributes(list(link.attributes)),
                            )
                            for link in span.links
                        ),
                    )
                )
    return found


class _Handler(BaseHTTPRequestHandler):
    receiver: ClassVar[OtlpReceiver]

    def do_POST(self) -> None:
        if self.path not in ("/v1/traces", "/v1/metrics", "/v1/logs"):
            self.send_error(404)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.receiver._heard(self.path, {k.lower(): v for k, v in self.headers.items()})
        refused = self.receiver.failing.get(self.path)
        if refused is not None:  # a collector in trouble: the request is answered, not kept
            self.receiver._refused(self.path)
            self.send_response(refused)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        if self.path == "/v1/logs":
            logs = ExportLogsServiceRequest()
            logs.ParseFromString(body)
            self.receiver._store_logs(decode_logs(logs))
            reply = ExportLogsServiceResponse().SerializeToString()
        elif self.path == "/v1/metrics":
            metrics = ExportMetricsServiceRequest()
            metrics.ParseFromString(body)
            self.receiver._store_metrics(decode_metrics(metrics))
            reply = ExportMetricsServiceResponse().SerializeToString()
        else:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.receiver._store(decode(request), encoding)
            reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""


@final
class OtlpReceiver:
    """An OTLP/HTTP (protobuf) trace endpoint on ``127.0.0.1``, on a free port.

    Serves from a thread it owns; leaving the ``with`` block stops and joins it.
    """

    def __init__(self) -> None:
        handler = type("Handler", (_Handler,), {"receiver": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self._encodings: list[str] = []
        self._metrics: list[ReceivedMetric] = []
        self._logs: list[ReceivedLog] = []
        self._refusals: list[str] = []
        self._headers: list[tuple[str, dict[str, str]]] = []
        # path -> the HTTP status to answer it with instead of taking the data (a test
        # may change it while the receiver runs: a collector that fails, then recovers)
        self.failing: dict[str, int] = {}

    def refusals(self) -> tuple[str, ...]:
        """The paths of the requests answered from ``failing``, in arrival order."""
        with self._lock:
            return tuple(self._refusals)

    def headers(self) -> tuple[tuple[str, dict[str, str]], ...]:
        """Each request's path and HTTP headers (names lower-cased), in arrival order."""
        with self._lock:
            return tuple(self._headers)

    def _heard(self, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self._headers.append((path, headers))

    def _refused(self, path: str) -> None:
        with self._lock:
            self._refusals.append(path)

    @property
    def endpoint(self) -> str:
        """The traces URL to export to."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"

    def spans(self) -> tuple[ReceivedSpan, ...]:
        """Every span received so far, in arrival order."""
        with self._lock:
            return tuple(self._spans)

    def metrics(self) -> tuple[ReceivedMetric, ...]:
        """Every metric received so far (one entry per metric per export), in arrival order."""
        with self._lock:
            return tuple(self._metrics)

    def logs(self) -> tuple[ReceivedLog, ...]:
        """Every log record received so far, in arrival order."""
        with self._lock:
            return tuple(self._logs)

    def _store_logs(self, logs: list[ReceivedLog]) -> None:
        with self._lock:
            self._logs.extend(logs)

    def _store_metrics(self, metrics: list[ReceivedMetric]) -> None:
        with self._lock:
            self._metrics.extend(metrics)

    def encodings(self) -> tuple[str, ...]:
        """The ``Content-Encoding`` of each request received ("" for none)."""
        with self._lock:
            return tuple(self._encodings)

    def _store(self, spans: list[ReceivedSpan], encoding: str) -> None:
        with self._lock:
            self._spans.extend(spans)
            self._encodings.append(encoding)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
