"""The MCP example is a real program: it starts its server, calls it, and prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAIN = Path(__file__).resolve().parents[2] / "examples" / "mcp" / "main.py"


def test_the_mcp_example_reads_a_note_through_its_server() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(MAIN)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tool call: notes_read_note({\"title\": \"groceries\"}) -> {'result': 'oats, coffee, lemons'}",
        'step: the note says: {"result":"oats, coffee, lemons"}',
        "answer: Groceries: oats, coffee, lemons.",
    ]
