"""The ping-pong example is a real program: run it on both backends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ping_pong.py"


def _play(backend: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLE), backend],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ping_pong_prints_what_happened(backend: str) -> None:
    done = _play(backend)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "rally of 10 hits: ping 5, pong 5",
        "pong stopped gracefully (alive: False)",
        "serving to pong now fails: actor 'pong' has stopped;"
        " the Serve message went to the dead letters",
        "system closed: ping alive False, dead letters 1 (stopped message to 'pong')",
    ]


def test_an_unknown_backend_is_a_usage_line_not_a_traceback() -> None:
    done = _play("curio")
    # A usage error is exit 2, as for any command (it was 1, a failure's).
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "usage: ping_pong.py [-h] [{asyncio,trio}]\n"
        "ping_pong.py: error: argument backend: invalid choice: 'curio' "
        "(choose from 'asyncio', 'trio')\n"
    )
