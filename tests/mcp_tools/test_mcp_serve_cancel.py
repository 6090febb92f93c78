"""``regiment mcp``: a client that cancels its ``run`` call (``notifications/cancelled``)
cancels the run (journaled ``cancelled``), gets no answer to it, and is served on."""

from __future__ import annotations

import time
from pathlib import Path

from tests.cli.helpers import write_team

from .test_mcp_stdio_stop import BACKENDS, _Client, _statuses


@BACKENDS
def test_a_client_s_cancel_cancels_the_run_and_the_server_serves_on(
    tmp_path: Path, backend: str
) -> None:
    journal = tmp_path / "runs.db"
    client = _Client(write_team(tmp_path, "stuck"), backend, "--journal", str(journal))
    try:
        client.call_run()  # id 2: its step waits for ever
        client.send("notifications/cancelled", {"requestId": 2, "reason": "the user gave up"})
        deadline = time.monotonic() + 60
        while _statuses(journal) != ["cancelled"]:
            assert time.monotonic() < deadline, _statuses(journal)
            time.sleep(0.2)
        client.send("ping", {}, 3)
        answer = client.receive()  # a cancelled request gets no answer: the ping's is next
        assert (answer["id"], answer["result"]) == (3, {})
    finally:
        client.close()
    assert client.process.returncode == 0


@BACKENDS
def test_a_client_that_cancels_and_closes_at_once_leaves_no_noise(
    tmp_path: Path, backend: str
) -> None:
    # A normal end: the run ends cancelled, the server exits 0 and says nothing (no line
    # of the SDK's about a closed stream, no traceback), whether the cancel reaches the
    # call before or after its run started.
    journal = tmp_path / "runs.db"
    team = write_team(tmp_path, "stuck")
    for started in (True, False):
        client = _Client(team, backend, "--journal", str(journal))
        try:
            if started:
                client.call_run()  # id 2, its step waiting for ever
            else:
                params = {"name": "run", "arguments": {"goal": "wait"}}
                client.send("tools/call", params, 2)
            client.send("notifications/cancelled", {"requestId": 2, "reason": "gave up"})
            assert client.process.stdin is not None
            client.process.stdin.close()  # at once
            code, said, rest = client.ended()
        finally:
            client.close()
        assert (code, said) == (0, "")
        assert [m for m in rest if m.get("id") == 2] == []  # a cancelled call: no answer
    statuses = _statuses(journal)  # (the one cancelled before it began may have no run)
    assert statuses[:1] == ["cancelled"]
    assert set(statuses) == {"cancelled"}
