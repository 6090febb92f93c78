"""The OTLP headers variables: a collector's credentials travel in them, so an entry the
exporters would drop (quoting it whole in a WARNING) is refused before they read it, and
the refusal names the header, never its value. Real OTLP/HTTP export to a loopback
receiver."""

from __future__ import annotations

import logging
import uuid

import pytest

from regiment.errors import ConfigError
from regiment.telemetry import configure_tracing

from .otlp_receiver import OtlpReceiver

VARIABLES = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*VARIABLES, "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.mark.parametrize("variable", VARIABLES)
@pytest.mark.parametrize(
    ("written", "named"),
    [
        ("authorization: Bearer {secret}", "header 'authorization'"),  # an HTTP header line
        ("x-team=a, Authorization:Bearer {secret}", "header 'Authorization'"),
        ("api-key=a,{secret}", "entry 2"),  # a comma in a value, not URL-encoded
        ('x-key="{secret}"', "header 'x-key'"),  # a quote needs URL-encoding
    ],
)
def test_a_malformed_header_is_refused_without_its_value(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    variable: str,
    written: str,
    named: str,
) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv(variable, written.format(secret=secret))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConfigError) as refused:  # refused before anything is sent
        configure_tracing("h", endpoint="http://127.0.0.1:9", set_global=False, logs=True)
    message = str(refused.value)
    assert f"{variable}: {named} is not name=value" in message
    assert f"{variable}='authorization=Bearer%20<token>'" in message  # what to write instead
    assert secret not in message
    assert [r.getMessage() for r in caplog.records if secret in r.getMessage()] == []


def test_well_formed_headers_reach_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{secret}, x-a = b")
    with OtlpReceiver() as receiver:
        handle = configure_tracing("h", endpoint=receiver.endpoint, set_global=False)
        handle.provider.get_tracer("t").start_span("s").end()
        handle.shutdown()
        ((path, headers),) = receiver.headers()
    assert path == "/v1/traces"
    assert headers["authorization"] == f"Bearer {secret}"
    assert headers["x-a"] == "b"


def test_without_otlp_export_the_variables_are_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization: Bearer x")
    handle = configure_tracing("h", otlp=False, set_global=False)
    assert handle.endpoint is None
    handle.shutdown()
