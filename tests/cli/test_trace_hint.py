"""``--trace jaeger`` with no collector listening said ``could not export trace ... to URL:
[Errno 111] Connection refused`` and stopped there. The line now also says what to do:
start a collector at that address, or point the variable that named it (or
``OTEL_EXPORTER_OTLP_ENDPOINT``, when none did) at one, or trace nothing; once, at the
end, however many exports failed."""

from __future__ import annotations

import io
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.cli._trace_report import collector_hint
from tests.serve.cli_serving import GOAL, REFUND, Log, serve_and_ask

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def refused() -> Iterator[str]:
    """A local URL whose port refuses connections: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(autouse=True)
def _no_endpoint_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


def _export_lines(said: str) -> list[str]:
    return [line for line in said.splitlines() if "could not export" in line]


@pytest.mark.parametrize(
    ("variable", "url"),
    [("OTEL_EXPORTER_OTLP_ENDPOINT", "{}"), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "{}/v1/x")],
    ids=["base", "traces"],
)
async def test_a_refused_export_says_what_to_do_once(
    variable: str, url: str, refused: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    endpoint = url.format(refused)
    monkeypatch.setenv(variable, endpoint)
    err = io.StringIO()
    argv = ["run", REFUND, GOAL, "--trace", "jaeger", "--app-dir", str(ROOT), "--no-journal"]
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 0, err.getvalue()
    (line,) = _export_lines(err.getvalue())
    shown = endpoint if variable.endswith("TRACES_ENDPOINT") else f"{endpoint}/v1/traces"
    assert f" to {shown}: " in line, line
    assert "Connection refused" in line, line
    assert f"is a collector listening? start one there, or set {variable} (which named it)" in line
    assert line.endswith("; --trace none sends nothing"), line


def test_the_default_endpoint_names_a_collector_to_start_and_the_variable() -> None:
    hint = collector_hint("http://localhost:4318/v1/traces", {})
    assert "docker run --rm -p 4318:4318 -p 16686:16686 jaegertracing/all-in-one" in hint
    assert "point OTEL_EXPORTER_OTLP_ENDPOINT at yours (http://HOST:4318)" in hint


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # `serve` runs on asyncio only
async def test_serve_says_what_to_do_when_its_traces_were_refused(
    refused: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused)
    err = Log()
    (done,) = await serve_and_ask(["--trace", "jaeger"], [("POST", "/runs?wait=true")], err)
    assert done.status_code == 200, done.text
    lines = _export_lines(err.getvalue())
    last = lines[-1]  # the command's own line at the end (a WARNING may come before it)
    assert last.startswith(f"regiment: could not export traces to {refused}/v1/traces: "), last
    assert "start one there, or set OTEL_EXPORTER_OTLP_ENDPOINT (which named it)" in last


@pytest.mark.parametrize(
    ("variable", "value", "tried"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318", "localhost:4318/v1/traces"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://", "http://"),
    ],
    ids=["no-scheme", "no-host"],
)
def test_an_endpoint_that_is_no_url_is_said_to_be_one(
    variable: str, value: str, tried: str
) -> None:
    # "is a collector listening? start one there" was the advice for `localhost:4318`.
    hint = collector_hint(tried, {variable: value})
    assert hint == (
        f"that is no http:// or https:// URL with a host: set {variable} to one, such as "
        "http://localhost:4318; --trace none sends nothing"
    )


async def test_a_run_whose_endpoint_has_no_scheme_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")
    err = io.StringIO()
    argv = ["run", REFUND, GOAL, "--trace", "jaeger", "--app-dir", str(ROOT), "--no-journal"]
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 0, err.getvalue()
    (line,) = _export_lines(err.getvalue())
    assert line.endswith(
        "that is no http:// or https:// URL with a host: set OTEL_EXPORTER_OTLP_ENDPOINT to "
        "one, such as http://localhost:4318; --trace none sends nothing"
    ), line
