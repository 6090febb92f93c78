"""``regiment validate`` printed the file's own text as written: a team name or a
check's description with an escape sequence drove the terminal (``\\x1b[2J`` cleared
it), and one with a newline split a line of the summary in two. They are shown as
escapes, as the progress lines show what a model wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

TEAM = r"""name = "t\u001b]0;pwned\u0007"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "billing"
description = "Issues refunds."

[checks.eligible]
description = "eligible\u001b[2J\nNOT A LINE OF THE SUMMARY"
predicate = "examples.refund.checks:eligible"
"""


async def test_the_files_text_is_shown_as_escapes_one_line_each(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(TEAM, encoding="utf-8")
    code, out, err = await run_cli("validate", str(team))
    assert code == 0, err
    assert out.splitlines() == [
        f"{team}: ok, team 't\\x1b]0;pwned\\x07'",
        "  planner: scripted, at most 10 steps",
        "  worker billing: scripted; no tools",
        "  check eligible: eligible\\x1b[2J\\nNOT A LINE OF THE SUMMARY",
    ]
    assert "\x1b" not in out
