"""``regiment serve`` stopped by SIGTERM (how systemd and Kubernetes stop a service) winds
down as Ctrl-C does: its live runs are cancelled and journaled so, it waits for what it
must (saying so), and a second signal exits at once. (uvicorn re-raised the SIGTERM it
had caught once it had stopped, so the process died by it, exit -15, before the journal
was closed, the last spans sent or a sync tool's thread waited for.)"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from regiment.journal import open_journal
from tests.cli.helpers import WAITING, write_napping_team, write_team
from tests.telemetry.otlp_receiver import OtlpReceiver

from .cli_serving import EMBEDDED, REGIMENT, serving

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals need POSIX")


def _status(db: str, run_id: str) -> str:
    async def status() -> str:
        journal = await open_journal(db)
        try:
            return (await journal.get_run(run_id)).status
        finally:
            await journal.close()

    return anyio.run(status)


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)], ids=["sigterm", "sigint"]
)
@pytest.mark.parametrize("program", [REGIMENT, EMBEDDED], ids=["regiment-serve", "embedded"])
def test_a_signal_cancels_the_live_runs_and_the_journal_says_so(
    tmp_path: Path, signum: signal.Signals, code: int, program: tuple[str, ...]
) -> None:
    # Embedded (serve_command without a stop), uvicorn handled the signals: once it had
    # stopped it re-raised a SIGTERM, which killed the program (-15) before the journal
    # was closed or anything after the call ran, and a SIGINT raised KeyboardInterrupt.
    db = str(tmp_path / "runs.db")
    with serving(write_team(tmp_path, "stuck"), "--journal", db, program=program) as served:
        started = httpx.post(f"{served.url}/runs", json={"goal": "wait"})
        run_id = started.json()["run_id"]
        served.read_until("run started")
        served.child.send_signal(signum)
        exit_code, said = served.rest()
    assert exit_code == code, said
    assert "stopping: 1 live run cancelled" in said
    assert "Finished server process" in said  # the app's shutdown ran to its end
    assert "Traceback" not in said
    if program == EMBEDDED:
        assert f"serve_command returned {code}" in said  # the program went on after it
    assert not Path(f"{db}-wal").exists()  # the journal was closed: SQLite folds its log in
    assert _status(db, run_id) == "cancelled"


@pytest.mark.parametrize("tool", ["nap", "doze"], ids=["sync", "async-swallows-cancel"])
def test_a_second_sigterm_exits_without_waiting(tmp_path: Path, tool: str) -> None:
    # A tool that goes on after its cancel (a sync body in a thread, an async one that
    # swallows it) holds the stop; the service says so, and the next SIGTERM leaves.
    with serving(write_napping_team(tmp_path, tool)) as served:
        httpx.post(f"{served.url}/runs", json={"goal": "nap"})
        served.read_until("napping")  # the tool's body runs
        served.child.send_signal(signal.SIGTERM)
        served.read_until(WAITING[tool])
        served.child.send_signal(signal.SIGTERM)
        exit_code, said = served.rest()  # not the minute the nap takes
    assert exit_code == 143, said  # 128 + SIGTERM, the signal that forced it
    assert "Traceback" not in said
    assert "Exception ignored" not in said


def test_sigterm_sends_the_last_spans_before_it_exits(tmp_path: Path) -> None:
    # Killed by the re-raised SIGTERM, the process never flushed its spans.
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint}
        with serving(write_team(tmp_path, "stuck"), "--trace", "jaeger", env=env) as served:
            httpx.post(f"{served.url}/runs", json={"goal": "wait"})
            served.read_until("run started")
            served.child.send_signal(signal.SIGTERM)
            exit_code, said = served.rest()
        spans = receiver.spans()  # the process has exited: what it sent is here
    assert exit_code == 0, said
    roots = [s for s in spans if s.name.startswith("invoke_agent") and s.parent_span_id is None]
    assert len(roots) == 1, [s.name for s in spans]
