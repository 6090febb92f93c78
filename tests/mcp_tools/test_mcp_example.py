"""The MCP example is a real program: it starts its server, calls it, and prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAIN = Path(__file__).resolve().parents[2] / "examples" / "mcp" / "main.py"

# Notes, in a fresh interpreter, which SDK modules the event loop's thread imports.
_SPY = """
import runpy, sys, threading
seen = []
class Spy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        on_loop = threading.current_thread() is threading.main_thread()
        if on_loop and name.split(".")[0] in ("mcp", "jsonschema") and "." in name:
            seen.append(name)
        return None
sys.meta_path.insert(0, Spy)
sys.argv = sys.argv[1:]  # as `python main.py` gives it: no arguments
runpy.run_path(sys.argv[0], run_name="__main__")
print("imported on the event loop:", seen)
"""


def _example(*before: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-W", "error", *before, str(MAIN)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_mcp_example_reads_a_note_through_its_server() -> None:
    assert _example() == [
        "tool call: notes_read_note({\"title\": \"groceries\"}) -> {'result': 'oats, coffee, lemons'}",
        'step: the note says: {"result":"oats, coffee, lemons"}',
        "answer: Groceries: oats, coffee, lemons.",
    ]


def test_the_sdk_is_not_imported_on_the_event_loop() -> None:
    # Importing the SDK takes about half a second: MCPServer.stdio() (which checked the
    # extra by importing it) and the team's start (which opened the client) did so on
    # the running loop, stalling every other task there for that long.
    lines = _example("-c", _SPY)
    assert lines[-1] == "imported on the event loop: []"
