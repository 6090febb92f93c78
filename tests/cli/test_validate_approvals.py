"""Issue #17 declares approvals in team files (``require_approval = [...]``) and on tools
(``@tool(requires_approval=...)``). ``regiment validate`` listed the worker's tools with no
word of them, so a file whose ``require_approval`` named the wrong tool, or a tool that
lost its rule, read the same as the right one. Now each tool that waits says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = ROOT / "examples" / "refund" / "team_approval.toml"

TEAM = """name = "t"
brain = "examples.refund.brain:refund_brain"

[[workers]]
name = "desk"
description = "Does what is asked."
tools = ["tests.cli.approval_tools:wire", "tests.cli.approval_tools:note",
         "tests.cli.approval_tools:look"]
{extra}
"""


async def test_the_refund_files_approval_shows(tmp_path: Path) -> None:
    code, out, err = await run_cli("validate", str(APPROVAL), "--app-dir", str(ROOT))
    assert code == 0, err
    assert (
        "  worker billing: anthropic:claude-sonnet-4-5; check_eligibility, "
        "issue_refund (needs approval), flag_exception"
    ) in out.splitlines()


@pytest.mark.parametrize(
    ("extra", "listed"),
    [
        ("", "wire (needs approval), note (may need approval), look"),
        (
            'require_approval = ["look", "note"]',
            "wire (needs approval), note (needs approval), look (needs approval)",
        ),
    ],
    ids=["tools-own-rules", "worker-require-approval"],
)
async def test_each_tool_says_whether_its_calls_wait(
    tmp_path: Path, extra: str, listed: str
) -> None:
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(extra=extra), encoding="utf-8")
    code, out, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 0, err
    assert f"  worker desk: scripted; {listed}" in out.splitlines()


async def test_an_mcp_servers_tool_named_in_require_approval_shows(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        TEAM.format(
            extra='require_approval = ["calc_add"]\n\n[[workers.mcp]]\n'
            'url = "http://127.0.0.1:9/mcp"\nname = "calc"\nprefix = "calc_"'
        ),
        encoding="utf-8",
    )
    code, out, err = await run_cli("validate", str(team), "--app-dir", str(ROOT))
    assert code == 0, err
    assert (
        "  worker desk: scripted; wire (needs approval), note (may need approval), look; "
        "the tools of MCP server 'calc' (http://127.0.0.1:9/mcp) "
        "(listed when the team starts; calc_add needs approval)"
    ) in out.splitlines()
