"""The restart budget and backoff of an MCP server's connection, on a hand-moved clock."""

from __future__ import annotations

from regiment.tools import MCPServer
from regiment.tools._mcp_restarts import Restarts


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_failed_attempts_back_off_and_spend_no_restarts() -> None:
    clock = Clock()
    restarts = Restarts(MCPServer.http("http://h/mcp", max_restarts=1, start_timeout=30), clock)
    assert restarts.broke()  # the first attempt comes at once
    waits = []
    while (wait := restarts.failed()) is not None:
        waits.append(wait)
        clock.now += wait
    assert waits == [0.5, 1, 2, 4, 8, 8, 6.5]  # the last one ends at start_timeout
    assert restarts.used == 1
    assert "could not be reconnected within start_timeout=30s (last attempt: refused)" in (
        restarts.timed_out("refused")
    )


def test_each_break_spends_a_restart_and_starts_the_backoff_over() -> None:
    clock = Clock()
    restarts = Restarts(MCPServer.stdio(["srv"], max_restarts=2), clock)
    assert restarts.broke()
    assert restarts.failed() == 0.5
    assert restarts.failed() == 1
    assert restarts.broke()  # it came back, then broke again
    assert restarts.failed() == 0.5
    assert not restarts.left
    assert not restarts.broke()
    assert restarts.used == 2
    assert "was already restarted 2 times (max_restarts=2)" in restarts.exhausted("exit 3")
