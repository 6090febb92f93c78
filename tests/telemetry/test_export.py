"""Honest export: a missing collector is reported in one line, quickly, with the trace id."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
import sys
from pathlib import Path

import pytest
from opentelemetry import trace

from regiment.cli import run_async
from regiment.telemetry import configure_tracing

from ..cli.helpers import write_team
from .otlp_receiver import OtlpReceiver
from .test_configure import run_python

REPO = Path(__file__).resolve().parents[2]
REFUND = str(REPO / "examples" / "refund" / "team.toml")
GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


@pytest.fixture
def closed_url(refused_port: int) -> str:
    """A collector's URL nothing listens at (for the test's length: see refused_port)."""
    return f"http://127.0.0.1:{refused_port}"


def test_a_missing_collector_is_one_reason_and_no_log_noise(
    capsys: pytest.CaptureFixture[str], closed_url: str
) -> None:
    handle = configure_tracing("t", endpoint=closed_url, set_global=False)
    with handle.provider.get_tracer("t").start_as_current_span("work"):
        pass
    handle.shutdown()
    assert handle.export_failure is not None
    assert "refused" in handle.export_failure.lower()
    assert capsys.readouterr().err == ""  # no retry warnings on the terminal


def test_a_collector_that_never_answers_is_named_as_such() -> None:
    # It takes the connection (the kernel queues it) and never replies: the
    # reason was "the exporter reported a failure", which says nothing.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        handle = configure_tracing("t", endpoint=url, set_global=False, export_timeout=0.5)
        with handle.provider.get_tracer("t").start_as_current_span("work"):
            pass
        handle.shutdown()
    assert handle.export_failure is not None
    assert handle.export_failure.startswith("no export went through within the export timeout")


@pytest.mark.parametrize(("timeout", "said"), [(0.5, ", and the export timeout ran out"), (3, "")])
def test_a_collector_answering_503_is_named_with_its_status(timeout: float, said: str) -> None:
    # With a timeout too short for the exporter's first retry (it waits about a second),
    # the 503 was lost: the reason read as if the collector never answered.
    with OtlpReceiver() as receiver:
        receiver.failing["/v1/traces"] = 503
        handle = configure_tracing(
            "t", endpoint=receiver.endpoint, set_global=False, export_timeout=timeout
        )
        with handle.provider.get_tracer("t").start_as_current_span("work"):
            pass
        handle.shutdown()
    assert handle.export_failure is not None
    assert handle.export_failure.startswith(
        f"the collector answered 503 Service Unavailable{said or ' until the export timeout'}"
    )


def test_a_missing_collector_puts_no_log_export_noise_on_the_terminal(closed_url: str) -> None:
    # The span export's failure was kept quiet, but the log export's, which
    # closes after it, reached Python's last-resort handler on stderr.
    out = run_python(
        f"""
        import logging, os, sys
        os.environ["OTEL_BLRP_SCHEDULE_DELAY"] = "60000"  # the records go at shutdown
        sys.stderr = sys.stdout  # where the last-resort handler writes
        from regiment.telemetry import configure_tracing

        url = "{closed_url}"
        handle = configure_tracing("t", endpoint=url, set_global=False, logs=True, export_timeout=0.5)
        with handle.provider.get_tracer("t").start_as_current_span("work"):
            logging.getLogger("regiment.app").warning("in a span")
        handle.shutdown()
        print("failure:", handle.export_failure)
        """
    )
    (line,) = out.splitlines()  # the failure, and nothing on stderr
    assert line.startswith("failure: no export went through within the export timeout")


def test_at_exit_a_silent_collector_is_tried_once_not_once_per_signal() -> None:
    # A program that never calls shutdown(): each provider flushed on its own at
    # exit, so the metrics and the logs each waited out the timeout again.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel takes the connections; nobody answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        run_python(
            f"""
            import logging, os
            os.environ["OTEL_BLRP_SCHEDULE_DELAY"] = "60000"  # the records go at exit
            from regiment.telemetry import configure_tracing

            handle = configure_tracing("t", endpoint="{url}", set_global=False, logs=True, export_timeout=0.5)
            with handle.provider.get_tracer("t").start_as_current_span("work"):
                logging.getLogger("regiment.app").warning("in a span")
            handle.meter_provider.get_meter("m").create_counter("c").add(1)
            """
        )
        silent.setblocking(False)
        tried = 0
        with contextlib.suppress(BlockingIOError):
            while True:
                silent.accept()[0].close()
                tried += 1
    assert tried == 1  # the spans; then neither the metrics nor the logs


def test_a_listening_collector_gets_the_spans_and_no_failure() -> None:
    with OtlpReceiver() as receiver:
        handle = configure_tracing("t", endpoint=receiver.endpoint, set_global=False)
        with handle.provider.get_tracer("t").start_as_current_span("work"):
            pass
        handle.shutdown()
        assert [s.name for s in receiver.spans()] == ["work"]
    assert handle.export_failure is None
    assert handle.watch is not None
    assert handle.watch.exported == 1


def test_export_timeout_must_be_positive() -> None:
    with pytest.raises(Exception, match="export_timeout must be a positive number"):
        configure_tracing("t", endpoint="http://127.0.0.1:1", set_global=False, export_timeout=0)


# The word, not a path that holds it (a checkout in /work/wt-trace15 named the team file
# in the offline notice, and the line counted as one about the trace).
TRACE_WORD = re.compile(r"\btrace\b")


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: a journal in tmp_path, not the repository's .regiment/."""
    return {"REGIMENT_JOURNAL": str(tmp_path / "journal.db")}


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


@pytest.mark.anyio
async def test_cli_says_it_could_not_export_and_names_the_trace(
    monkeypatch: pytest.MonkeyPatch, closed_url: str, environ: dict[str, str]
) -> None:
    url = closed_url
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(
        ["run", REFUND, GOAL, "--trace", "jaeger"], stdout=out, stderr=err, environ=environ
    )
    assert code == 0, err.getvalue()
    lines = [line for line in err.getvalue().splitlines() if TRACE_WORD.search(line)]
    assert len(lines) == 1, lines
    prefix = "regiment: could not export trace "
    assert lines[0].startswith(prefix)
    trace_id, rest = lines[0][len(prefix) :].split(" ", 1)
    assert len(trace_id) == 32
    assert int(trace_id, 16) != 0
    assert rest.startswith(f"to {url}/v1/traces: ")
    assert "sent to" not in err.getvalue()


@pytest.mark.anyio
async def test_a_failed_run_still_names_its_trace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, environ: dict[str, str]
) -> None:
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        team = write_team(tmp_path, "garbage")
        out, err = io.StringIO(), io.StringIO()
        code = await run_async(
            ["run", str(team), "do it", "--app-dir", str(tmp_path), "--trace", "jaeger"],
            stdout=out,
            stderr=err,
            environ=environ,
        )
        spans = receiver.spans()
    assert code == 1
    root = next(s for s in spans if s.name == "invoke_agent waiters")
    assert f"regiment: trace {root.trace_id} sent to {receiver.endpoint}" in err.getvalue()
    assert int(root.trace_id, 16) != trace.INVALID_TRACE_ID


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["jaeger", "console"])
async def test_cli_says_when_the_sdk_variable_turned_tracing_off(
    monkeypatch: pytest.MonkeyPatch, mode: str, environ: dict[str, str]
) -> None:
    # `--trace jaeger` said nothing at all, `--trace console` an empty "trace (none started):".
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(
        ["run", REFUND, GOAL, "--trace", mode], stdout=out, stderr=err, environ=environ
    )
    assert code == 0, err.getvalue()
    lines = [line for line in err.getvalue().splitlines() if TRACE_WORD.search(line)]
    assert lines == [
        "regiment: no trace: OTEL_SDK_DISABLED=true turns tracing off; unset it to trace"
    ]


def test_a_failing_collector_is_one_warning_per_outage_not_one_per_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An application that configured logging (caplog's handler is on the root logger)
    # got the exporter's ERROR for every batch, every few seconds while the collector
    # failed; a collector that takes only traces did the same for every metrics export.
    with OtlpReceiver() as receiver:
        receiver.failing.update({"/v1/traces": 500, "/v1/metrics": 404})
        handle = configure_tracing(
            "t", endpoint=receiver.endpoint, set_global=False, export_timeout=0.5
        )
        assert handle.meter_provider is not None
        tracer = handle.provider.get_tracer("t")
        counter = handle.meter_provider.get_meter("m").create_counter("c")

        def batches(n: int) -> None:
            for _ in range(n):
                with tracer.start_as_current_span("work"):
                    counter.add(1)
                handle.force_flush()

        with caplog.at_level(logging.INFO):
            batches(3)
            del receiver.failing["/v1/traces"]  # the collector is back, for traces
            batches(2)
            receiver.failing["/v1/traces"] = 503  # and fails again
            batches(2)
            handle.shutdown()
        refused = receiver.refusals()
    said = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert [s for s in said if s[0].startswith("opentelemetry")] == []
    traces, metrics = receiver.endpoint, receiver.endpoint.replace("traces", "metrics")
    assert [(name, level, message.split(": ")[0]) for name, level, message in said] == [
        ("regiment.telemetry", "WARNING", f"could not export spans to {traces}"),
        ("regiment.telemetry", "WARNING", f"could not export metrics to {metrics}"),
        ("regiment.telemetry", "INFO", f"spans are exported to {traces} again"),
        ("regiment.telemetry", "WARNING", f"could not export spans to {traces}"),
    ]
    assert "code: 500" in said[0][2]
    assert "code: 404" in said[1][2]
    # the 503 was answered too fast for a retry in the timeout: it is named all the same
    assert "the collector answered 503 Service Unavailable, and the export timeout" in said[3][2]
    assert refused.count("/v1/metrics") >= 7  # each export was tried, and said once
    assert handle.export_failure is not None
    assert handle.export_failure.startswith("Failed to export spans batch code: 500")


@pytest.mark.anyio
async def test_an_endpoint_s_password_is_never_printed_nor_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, environ: dict[str, str]
) -> None:
    # The CLI's line named the endpoint as given, a basic-auth password and all; so
    # did the watch's WARNING.
    with OtlpReceiver() as receiver:
        port = receiver.endpoint.split(":")[2].split("/")[0]
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://ann:pw-s3cret@127.0.0.1:{port}")
        out, err = io.StringIO(), io.StringIO()
        code = await run_async(
            ["run", REFUND, GOAL, "--trace", "jaeger"], stdout=out, stderr=err, environ=environ
        )
        assert code == 0, err.getvalue()
        sent = err.getvalue()
        assert receiver.spans()  # the password went where it belongs: to the collector
        receiver.failing["/v1/traces"] = 500
        handle = configure_tracing("t", set_global=False, export_timeout=0.5)
        with caplog.at_level(logging.WARNING, logger="regiment.telemetry"):
            with handle.provider.get_tracer("t").start_as_current_span("work"):
                pass
            handle.force_flush()
        handle.shutdown()
    endpoint = f"http://ann:[REDACTED]@127.0.0.1:{port}/v1/traces"
    assert f" sent to {endpoint}\n" in sent
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "regiment.telemetry"]
    assert warning.startswith(f"could not export spans to {endpoint}: ")
    assert "s3cret" not in sent + warning


def test_an_exporter_of_the_application_s_own_keeps_its_records(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The watch takes only what its own exports log: an application's exporter, in a
    # provider of its own, still says each of its failures.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    with OtlpReceiver() as receiver:
        receiver.failing["/v1/traces"] = 500
        handle = configure_tracing("t", endpoint=receiver.endpoint, set_global=False)
        own = TracerProvider(shutdown_on_exit=False)
        own.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint)))
        with caplog.at_level(logging.WARNING):
            with own.get_tracer("app").start_as_current_span("mine"):
                pass
            own.force_flush()
        own.shutdown()
        handle.shutdown()
    said = [(r.name, r.getMessage()) for r in caplog.records]
    assert said == [
        (
            "opentelemetry.exporter.otlp.proto.http.trace_exporter",
            "Failed to export spans batch code: 500, reason: Internal Server Error",
        )
    ]
    assert handle.export_failure is None
