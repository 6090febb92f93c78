"""Writing spans to a file as OTLP JSON, one export request per line."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from regiment._json import JsonObject
from regiment.errors import ConfigError

__all__ = ("OtlpJsonFileExporter", "spans_to_otlp_json")

# OTLP/JSON writes ids as hex, where protobuf's own JSON mapping would use base64.
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> JsonObject:
    """``spans`` as one OTLP/JSON ``ExportTraceServiceRequest``, ready for ``json.dumps``."""
    # Imported here: protobuf and the encoder take a noticeable part of a second to
    # load, and most programs (``regiment validate``, say) never write a trace file.
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    # protobuf ships no type information; the walk below knows the shape.
    request: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return request


def _hex_ids(obj: dict[str, Any]) -> None:
    for field in _ID_FIELDS:
        value = obj.get(field)
        if isinstance(value, str):
            obj[field] = _base64_to_hex(value)


def _base64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


@final
class OtlpJsonFileExporter(SpanExporter):
    """A span exporter that appends OTLP/JSON lines to a file.

    Each export becomes one line holding an ``ExportTraceServiceRequest``, the
    format the OpenTelemetry Collector's file exporter writes and its OTLP JSON
    file receiver reads back.

    Args:
        path: the file; created if missing, appended to if present.

    Raises:
        ConfigError: the file cannot be opened for writing.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        try:
            self._file = self._path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot open the trace file {str(self._path)!r} for writing ({exc}); "
                "pass a path in a writable directory"
            ) from exc
        # The batch processor exports from its own thread; flush and shutdown
        # may come from another.
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The file spans are written to."""
        return self._path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append one line for this batch of spans."""
        line = json.dumps(spans_to_otlp_json(spans), separators=(",", ":"))
        with self._lock:
            if self._file.closed:
                return SpanExportResult.FAILURE
            self._file.write(line + "\n")
            self._file.flush()
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Lines are flushed as they are written, so there is nothing to wait for."""
        return True

    def shutdown(self) -> None:
        """Close the file; later exports fail."""
        with self._lock:
            self._file.close()
