"""``[[workers.mcp]]`` in team files: decoded into MCPServer tool sources."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from regiment.cli import main
from regiment.config._build import check_config
from regiment.config._schema import parse_config
from regiment.errors import ConfigError
from regiment.hierarchy import Worker
from regiment.tools import MCPHub, MCPServer
from regiment.tools._mcp_server import HttpTransport, StdioTransport

from .conftest import SERVER_COMMAND

REPO = Path(__file__).resolve().parents[2]  # where examples.mcp imports from

TEAM = """
name = "t"
brain = "examples.mcp.main:brain"
[planner]
model = "scripted"
[[workers]]
name = "files"
description = "reads files"
model = "scripted"
{mcp}
"""


def worker_of(mcp: str) -> Worker:
    config = parse_config(TEAM.format(mcp=mcp), format="toml", source="team.toml")
    team = check_config(config, source="team.toml")
    (worker,) = team.workers
    assert isinstance(worker, Worker)
    return worker


def test_a_stdio_and_an_http_server_per_worker() -> None:
    worker = worker_of(
        f"""
[[workers.mcp]]
command = {json.dumps(list(SERVER_COMMAND))}
include = ["add"]
prefix = "calc_"
timeout = 5.0
env = {{ LOG = "1" }}

[[workers.mcp]]
url = "http://127.0.0.1:8000/mcp"
headers = {{ Authorization = "Bearer x" }}
exclude = ["crash"]
name = "remote"
"""
    )
    stdio, http = worker.mcp_servers
    assert isinstance(stdio, MCPServer)
    assert stdio.transport == StdioTransport(
        command=SERVER_COMMAND[0], args=SERVER_COMMAND[1:], env={"LOG": "1"}
    )
    assert (stdio.include, stdio.prefix, stdio.options["timeout"]) == (("add",), "calc_", 5.0)
    assert http.transport == HttpTransport(
        url="http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer x"}
    )
    assert (http.name, http.exclude) == ("remote", ("crash",))
    assert worker.toolset.names == ()  # its MCP tools are listed when the team starts


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('command = ["x"]\nurl = "http://h/mcp"', "give either command = \\[...\\]"),
        ("prefix = 'p_'", "give either command"),
        ('url = "http://h/mcp"\ncwd = "/tmp"', "env and cwd go with command"),
        ('command = ["x"]\ninclude = ["a"]\nexclude = ["a"]', "both includes and excludes"),
        ('command = ["x"]\ncolour = "red"', "unknown key `colour =`"),
    ],
)
def test_bad_entries_name_the_file_and_key(entry: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        worker_of(f"[[workers.mcp]]\n{entry}\n")
    assert str(info.value).startswith("team.toml: workers[0].mcp[0]: ")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://[::1/mcp", "workers[0].mcp[0].url: not a valid URL (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999/mcp", "workers[0].mcp[0]: MCPServer.http needs a valid URL"),
        ("http:///mcp", "workers[0].mcp[0]: MCPServer.http needs a URL with a host"),
    ],
)
def test_a_url_that_does_not_parse_is_one_line_naming_its_key(url: str, message: str) -> None:
    """``regiment validate`` printed a traceback of the ``ValueError`` for the first."""
    with pytest.raises(ConfigError) as info:
        worker_of(f'[[workers.mcp]]\nurl = "{url}"\n')
    assert str(info.value).startswith(f"team.toml: {message}")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("timeout = -3", "timeout: must be a finite number of seconds > 0, or leave the key out"),
        ("timeout = nan", "timeout: must be a finite number of seconds > 0"),
        ("start_timeout = 0", "start_timeout: must be a finite number of seconds > 0, or leave"),
        ("start_timeout = inf", "start_timeout: must be a finite number of seconds > 0"),
        ("retries = -1", "retries: must be a whole number >= 0"),
        ("max_restarts = -1", "max_restarts: must be a whole number >= 0"),
        ("max_result_chars = 0", "max_result_chars: must be a whole number of characters >= 1"),
    ],
)
def test_a_number_out_of_range_names_its_key_and_what_to_write(entry: str, message: str) -> None:
    # It named only the entry ("workers[0].mcp[0]: timeout must be positive seconds or
    # None"), and None cannot be written in a file; nan and inf were taken.
    with pytest.raises(ConfigError) as info:
        worker_of(f'[[workers.mcp]]\ncommand = ["x"]\n{entry}\n')
    assert str(info.value).startswith(f"team.toml: workers[0].mcp[0].{message}")
    assert "None" not in str(info.value)


@pytest.mark.anyio
async def test_max_result_chars_cuts_the_results_of_an_entry_s_tools() -> None:
    # `[[workers.mcp]]` had no such key (unknown key `max_result_chars =`): only code could
    # set it, through the tool options.
    worker = worker_of(
        f"""
max_tool_result_chars = 1000
[[workers.mcp]]
command = {json.dumps(list(SERVER_COMMAND))}
max_result_chars = 20
"""
    )
    (server,) = worker.mcp_servers
    async with MCPHub.open() as hub:
        tools = (await hub.worker_tools(worker.toolset, [server])).current()
        result = await tools.call("shout", {"text": "a" * 200}, call_id="c1")
    assert server.options["max_result_chars"] == 20
    assert isinstance(result.content, str)
    assert result.content.startswith('{"result":"AAAAAAAAA\n\n[cut: this result was 213 ')
    assert "over the limit of 20," in result.content


def test_require_approval_may_name_a_worker_s_mcp_tools() -> None:
    worker = worker_of(
        f"""
require_approval = ["calc_add"]
[[workers.mcp]]
command = {json.dumps(list(SERVER_COMMAND))}
prefix = "calc_"
"""
    )
    assert worker.require_approval == ("calc_add",)  # checked when the team starts
    assert worker.mcp_servers


def test_validate_names_a_worker_s_mcp_servers_without_starting_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        TEAM.format(
            mcp="""
[[workers.mcp]]
command = ["true", "--calc"]

[[workers.mcp]]
url = "http://127.0.0.1:9/mcp"
name = "remote"
"""
        )
    )
    assert main(["validate", str(team), "--app-dir", str(REPO)]) == 0
    assert (
        "worker files: scripted; the tools of MCP servers 'true --calc', "
        "'remote' (http://127.0.0.1:9/mcp) (listed when the team starts)"
    ) in capsys.readouterr().out


def test_run_with_a_server_that_speaks_no_mcp_prints_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The SDK's "Failed to parse JSONRPC message from server" came with a pydantic
    # traceback (Python's last-resort handler), then "could not be started: MCPError:
    # Connection closed".
    team = tmp_path / "team.toml"
    command = [sys.executable, "-c", "print('hello, not MCP')"]
    team.write_text(TEAM.format(mcp=f"[[workers.mcp]]\ncommand = {json.dumps(command)}"))
    assert main(["run", str(team), "add", "--app-dir", str(REPO), "--no-journal"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (
        " ERROR mcp.client.stdio: Failed to parse JSONRPC message from server (ValidationError: "
        in err
    )
    assert err.endswith(
        "could not be started: it closed the connection before it was up (a stdio server that "
        "exited, or that wrote something other than MCP messages to stdout: see what it wrote "
        "to stderr)\n"
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            'command = ["no-such-mcp-server", "--stdio"]',
            "command 'no-such-mcp-server' is not found on PATH; install it, or give its full path",
        ),
        (
            'command = ["python3", "server.py"]\nenv = {{ PATH = "/nonexistent" }}',
            "command 'python3' is not found on the PATH its env sets; install it, or give its "
            "full path",
        ),
        (
            'command = ["./server.py"]\ncwd = "{tmp}"',
            "command './server.py' does not exist (looked for {tmp}/server.py); a relative path "
            "is read from the server's cwd, else the current directory",
        ),
        (
            'command = ["{tmp}/plain.txt"]',
            "command '{tmp}/plain.txt' is not executable; make it so (chmod +x) or run it "
            "through its interpreter (['python', '{tmp}/plain.txt', ...])",
        ),
        (
            'command = ["python3", "server.py"]\ncwd = "{tmp}/gone"',
            "cwd '{tmp}/gone' is not a directory; fix the path or create it",
        ),
    ],
    ids=["not-on-path", "not-on-env-path", "no-such-file", "not-executable", "no-such-cwd"],
)
def test_validate_refuses_a_stdio_server_that_cannot_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, problem: str
) -> None:
    # `regiment validate` said "ok" of them; `regiment run` then could not start the team.
    (tmp_path / "plain.txt").write_text("not a program")
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(mcp="[[workers.mcp]]\n" + entry.format(tmp=tmp_path)))
    assert main(["validate", str(team), "--app-dir", str(REPO)]) == 2
    assert capsys.readouterr().err == (
        f"regiment: error: {team}:10: workers[0].mcp[0]: {problem.format(tmp=tmp_path)}\n"
    )


def test_validate_leaves_the_servers_of_a_worker_placed_on_ray_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # They start in its replicas, which may run on machines that have the command.
    mcp = '[[workers.mcp]]\ncommand = ["no-such-mcp-server"]\n[workers.placement]\nkind = "ray"'
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(mcp=mcp))
    assert main(["validate", str(team), "--app-dir", str(REPO)]) == 0
    assert "MCP server 'no-such-mcp-server'" in capsys.readouterr().out


def test_run_says_a_missing_command_was_looked_for_on_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "[Errno 2] No such file or directory", as of a file given by its path.
    team = tmp_path / "team.toml"
    team.write_text(TEAM.format(mcp='[[workers.mcp]]\ncommand = ["no-such-mcp-server"]'))
    assert main(["run", str(team), "add", "--app-dir", str(REPO), "--no-journal"]) == 2
    assert capsys.readouterr().err.endswith(
        "MCP server 'no-such-mcp-server' could not be started: FileNotFoundError: [Errno 2] "
        "No such command on PATH: 'no-such-mcp-server'\n"
    )
