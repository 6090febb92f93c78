"""A blank MCP server ``name`` was taken: every message, log line and span then named
the server ``''`` (``regiment validate``: "the tools of MCP server '' (python3)")."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.config import check_config, load_config
from regiment.errors import ConfigError
from regiment.tools import MCPServer

BLANK = "give it a name, or leave name out to name it by its command line or URL"


@pytest.mark.parametrize("name", ["", "  "])
def test_a_blank_server_name_is_refused_in_code(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        MCPServer.stdio(["python3", "-m", "server"], name=name)
    assert str(caught.value) == f"MCP server name is blank ({name!r}); {BLANK}"
    with pytest.raises(ConfigError, match="MCP server name is blank"):
        MCPServer.http("http://127.0.0.1:8000/mcp", name=name)


def test_a_blank_server_name_is_refused_in_a_team_file(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "t"\nbrain = "examples.refund.brain:refund_brain"\n\n[[workers]]\nname = "w"\n'
        'description = "d"\n\n[[workers.mcp]]\ncommand = ["python3"]\nname = ""\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        check_config(load_config(team), source=str(team))
    assert str(caught.value) == f"{team}: workers[0].mcp[0]: MCP server name is blank (''); {BLANK}"


def test_a_named_server_and_an_unnamed_one_keep_their_names() -> None:
    assert MCPServer.stdio(["python3", "-m", "server"], name="notes").name == "notes"
    assert MCPServer.stdio(["python3", "-m", "server"]).name == "python3 -m server"
