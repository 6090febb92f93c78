"""``regiment mcp`` over stdio given a line that is not a JSON-RPC message (not JSON, or
JSON but no object): the MCP SDK drops it, unanswered, saying so only at DEBUG, so a
client with a broken writer waited for an answer that never came and nobody saw why.
Each such line is now a WARNING on the command's stderr, quoting the line's start; the
server goes on serving, and answers the next request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFUND = str(ROOT / "examples" / "refund" / "team.toml")


def test_a_line_that_is_not_a_message_is_a_warning_and_serving_goes_on(tmp_path: Path) -> None:
    ping = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    served = subprocess.run(
        [sys.executable, "-m", "regiment", "mcp", REFUND, "--model", "scripted"],
        input=f"garbage {'x' * 200}\n[1]\n\n{ping}\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert served.returncode == 0, served.stderr
    warned = [line for line in served.stderr.splitlines() if "WARNING regiment.mcp:" in line]
    assert len(warned) == 2, served.stderr  # the blank line is no message, and no slip
    assert (
        "not a JSON-RPC message (a JSON object), so it was dropped unanswered: 'garbage x"
        in warned[0]
    )
    assert len(warned[0]) < 400  # the line's start, not all of it
    assert warned[1].endswith("dropped unanswered: '[1]'; a client writes one JSON object a line")
    (answer,) = [json.loads(line) for line in served.stdout.splitlines()]
    assert answer == {"jsonrpc": "2.0", "id": 7, "result": {}}
