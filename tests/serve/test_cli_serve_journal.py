"""``regiment serve --journal FILE``: a run served before a restart is still there after it."""

from __future__ import annotations

import io
import socket
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from regiment.cli import run_async

from .cli_serving import REFUND, serve_and_ask

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command adds --app-dir to it


async def _serving(journal: Path, ask: list[tuple[str, str]]) -> list[httpx.Response]:
    """Serve the refund team over ``journal``, make the ``ask`` requests, stop."""
    return await serve_and_ask(["--journal", str(journal)], ask)


async def test_a_run_served_before_a_restart_is_answered_from_the_journal(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    (posted,) = await _serving(journal, [("POST", "/runs?wait=true")])
    assert posted.json()["status"] == "completed"
    run_id = posted.json()["run_id"]
    listed, shown = await _serving(journal, [("GET", "/runs"), ("GET", f"/runs/{run_id}")])
    assert [r["run_id"] for r in listed.json()["runs"]] == [run_id]
    assert shown.json()["status"] == "completed"
    assert shown.json()["answer"] == posted.json()["answer"]


async def test_a_journal_that_cannot_open_is_one_line_and_exit_2(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("not a journal\n")
    err = io.StringIO()
    argv = ["serve", REFUND, "--port", "1", "--model", "scripted", "--journal", str(text)]
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2
    (line,) = err.getvalue().splitlines()
    # it named the file as the journal's words do, but not the option, as run and mcp do
    assert line.startswith(f"regiment: error: --journal {text}: {text} is not a regiment journal")
    assert text.read_text() == "not a journal\n"  # left untouched


async def test_an_address_in_use_is_exit_2_with_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = io.StringIO()
        argv = ["serve", REFUND, "--port", str(port), "--model", "scripted"]
        code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2
    assert "address already in use" in err.getvalue()  # uvicorn's own log line
    last = err.getvalue().splitlines()[-1]
    assert last.startswith(f"regiment: error: could not serve on 127.0.0.1:{port}")
    assert "Traceback" not in err.getvalue()


async def test_a_postgresql_journal_whose_server_is_down_is_one_line_and_exit_2(
    refused_port: int,
) -> None:
    # It was exit 2 already, but the line ended on libpq's question ("Is the server
    # running on that host and accepting TCP/IP connections?") with nothing to do.
    port = refused_port  # nothing listens there: the server is down
    url = f"postgresql://postgres:hunter2@127.0.0.1:{port}/runs"
    err = io.StringIO()
    argv = ["serve", REFUND, "--port", "1", "--model", "scripted", "--journal", url]
    code = await run_async(argv, stdout=io.StringIO(), stderr=err, environ={})
    assert code == 2
    (line,) = err.getvalue().splitlines()
    shown = f"postgresql://postgres@127.0.0.1:{port}/runs"  # the password left out
    assert line.startswith(
        f"regiment: error: --journal {shown}: connecting failed: "  # the journal named once
    )
    assert "Connection refused" in line
    assert line.endswith(
        "check that the server runs and takes connections at that address and that the "
        "URL's user, password and database are right, then try again"
    )
    assert "hunter2" not in line  # nor in the --journal the line starts with
