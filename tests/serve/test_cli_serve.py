"""``regiment serve``: refuses a public host without a token; serves a team file."""

from __future__ import annotations

import argparse
import functools
import gc
import io
import sys

import anyio
import httpx2 as httpx
import pytest

from regiment.cli import run_async
from regiment.serve._serve import serve_command
from tests.telemetry.otlp_receiver import OtlpReceiver

from .cli_serving import GOAL, REFUND, Log, serve_and_ask
from .teams import Stuck, stuck_team

pytestmark = pytest.mark.anyio

SCAN = "Please scan the warehouse for order 55001."


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::"])
async def test_a_public_host_without_a_token_is_refused(host: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["serve", REFUND, "--host", host, "--model", "scripted"]
    code = await run_async(argv, stdout=out, stderr=err, environ={})
    assert code == 2
    assert f"refusing to serve on {host} without a token" in err.getvalue()
    assert "REGIMENT_TOKEN" in err.getvalue()


@pytest.mark.parametrize("token", ["", "   "], ids=["empty", "blank"])
async def test_a_blank_token_is_refused_not_taken_for_no_auth(token: str) -> None:
    err = io.StringIO()
    argv = ["serve", REFUND, "--token", token, "--model", "scripted"]
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2
    assert err.getvalue().splitlines()[-1] == (
        "regiment: error: --token is empty; give a secret, or leave it out to serve without one"
    )


async def test_serve_runs_the_team_file_with_the_token_from_the_environment() -> None:
    out, err, stop = io.StringIO(), Log(), anyio.Event()
    argv = ["serve", REFUND, "--port", "0", "--model", "scripted"]
    environ = {"REGIMENT_TOKEN": "from-env"}
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            assert (
                await run_async(argv, stdout=out, stderr=err, environ=environ, interrupt=stop) == 0
            )

        gc.unfreeze()  # tests/conftest.py froze the worker's heap; it is frozen again after
        assert gc.get_freeze_count() == 0
        tg.start_soon(serve)
        await err.ready.wait()
        # the start-up heap is kept out of full collections while serving
        assert gc.get_freeze_count() > 0
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{err.port}") as c:
            assert (await c.get("/health")).json() == {"status": "ok"}
            assert (await c.get("/runs")).status_code == 401
            auth = {"Authorization": "Bearer from-env"}
            done = await c.post("/runs?wait=true", json={"goal": GOAL}, headers=auth)
            assert done.json()["status"] == "completed"
        stop.set()
    assert gc.get_freeze_count() == 0  # thawed on the way out
    log = err.getvalue()
    run_id = done.json()["run_id"]
    assert f"regiment.serve: run started [run_id={run_id}]" in log


async def test_a_heap_the_application_froze_is_left_to_it() -> None:
    from regiment.serve._serve import frozen_heap

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with frozen_heap():
            assert gc.get_freeze_count() == frozen  # not collected and frozen again
        assert gc.get_freeze_count() == frozen  # nor thawed: it is the application's
    finally:
        gc.unfreeze()


async def test_stopping_the_server_answers_a_waiting_post_with_its_cancelled_run() -> None:
    # uvicorn waits for open requests before the app's shutdown (which cancels the
    # runs): a ?wait=true on a run stuck in a tool held the stop for as long as the run.
    stuck, err, stop = Stuck(), Log(), anyio.Event()
    options = argparse.Namespace(
        host="127.0.0.1",
        port=0,
        token=None,
        journal=None,
        keep_runs=None,
        lease_ttl=None,
        verbose=0,
    )
    serve = functools.partial(serve_command, environ={}, stderr=err, stop=stop)
    with anyio.fail_after(30):  # a guard: the old stop never came
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve, stuck_team(stuck), options)
            await err.ready.wait()

            async def stop_once_stuck() -> None:
                await stuck.started.wait()
                stop.set()

            tg.start_soon(stop_once_stuck)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{err.port}") as c:
                done = await c.post("/runs?wait=true", json={"goal": SCAN}, timeout=None)
    assert (done.status_code, done.json()["status"]) == (200, "cancelled")
    assert stuck.cancelled.is_set()
    assert "regiment.serve: stopping: 1 live run cancelled" in err.getvalue()


async def test_serve_with_trace_jaeger_exports_each_runs_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `regiment serve` had no way to trace its runs short of installing a global provider.
    err = Log()
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        (posted,) = await serve_and_ask(["--trace", "jaeger"], [("POST", "/runs?wait=true")], err)
        spans = receiver.spans()  # the command flushed them before it returned
    done = posted.json()
    assert f"regiment: tracing each run to {receiver.endpoint} (OTLP/HTTP)" in err.getvalue()
    (root,) = [s for s in spans if s.name.startswith("invoke_agent") and s.parent_span_id is None]
    assert root.trace_id == done["trace_id"]
    assert {s.trace_id for s in spans} == {done["trace_id"]}
    assert any(s.name.startswith("execute_tool") for s in spans)
