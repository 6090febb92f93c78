"""``${NAME}`` in a team file's MCP entries: secrets read from the environment, never
written in the file, and never shown by ``validate``, ``run``, logs or errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from regiment.cli import main
from regiment.config import load_config, load_team
from regiment.config._env import expand
from regiment.errors import ConfigError
from regiment.hierarchy import Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, tool_call_response

from .brain import add_brain
from .conftest import SDK_HTTP_LEAKS, SERVER_COMMAND, start_http, stop

REPO = Path(__file__).resolve().parents[2]
SECRET = "s3cret-Zq8"

TEAM = """
name = "t"
brain = "tests.mcp_tools.brain:add_brain"

[[workers]]
name = "calc"
description = "adds numbers"

[[workers.mcp]]
{entry}
"""


def team_file(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "team.toml"
    path.write_text(TEAM.format(entry=entry))
    return path


@pytest.mark.parametrize("token", [SECRET, "wrong-token"])
@SDK_HTTP_LEAKS[0]
@SDK_HTTP_LEAKS[1]
def test_a_header_reads_its_token_from_the_environment_and_never_shows_it(
    tmp_path: Path,
    token: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The token had to be written in the file: headers took no environment reference.
    process, port = start_http(0, "guarded", "--token", SECRET)
    path = team_file(
        tmp_path,
        f'url = "http://127.0.0.1:{port}/mcp"\n'
        'headers = { Authorization = "Bearer ${MCP_TOKEN}" }',
    )
    monkeypatch.setenv("MCP_TOKEN", token)
    caplog.set_level(logging.DEBUG)
    try:
        checked = main(["validate", str(path), "--app-dir", str(REPO)])
        ran = main(["run", str(path), "add", "--app-dir", str(REPO), "--no-journal", "-vv"])
    finally:
        stop(process)
    out, err = capsys.readouterr()
    assert checked == 0
    if token == SECRET:
        assert ran == 0, err
        assert 'the sum: {"result":3}' in out
    else:  # refused: the error names the header, not its value
        assert ran != 0
        assert "HTTP 401 Unauthorized" in err
        assert "it refused the credentials sent (headers sent: Authorization); check their " in err
    for shown in (out, err, caplog.text, repr(load_config(path))):
        assert token not in shown


@pytest.mark.anyio
async def test_a_stdio_server_s_env_reads_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = team_file(
        tmp_path,
        f"command = {json.dumps(list(SERVER_COMMAND))}\n"
        'env = { API_KEY = "${MY_KEY}", PRICE = "$$5 or ${UNSET_ONE:-none}" }',
    )
    monkeypatch.setenv("MY_KEY", SECRET)
    monkeypatch.delenv("UNSET_ONE", raising=False)
    asked = iter(["API_KEY", "PRICE"])

    def brain(request: ModelRequest) -> ModelResponse | str:
        if request.role == "worker":
            name = next(asked, None)
            return "read" if name is None else tool_call_response("getenv", {"name": name})
        return add_brain(request)

    team = load_team(path, model=ScriptedModel(brain))
    result = await team.run("read the variables")
    (step,) = result.steps
    assert [o.content for o in step.tool_outcomes] == [
        {"result": SECRET},
        {"result": "$5 or none"},
    ]


@pytest.mark.parametrize(
    ("entry", "line", "message"),
    [
        (
            'url = "http://h/mcp"\nheaders = { Authorization = "Bearer ${NO_SUCH_TOKEN}" }',
            11,
            "workers[0].mcp[0].headers.Authorization: the environment variable NO_SUCH_TOKEN "
            "is not set; set it where the team runs (export NO_SUCH_TOKEN=...), or give a "
            "default (`${NO_SUCH_TOKEN:-...}`)",
        ),
        (
            'command = ["x"]\nenv = { TOKEN = "$NO_SUCH_TOKEN" }',
            11,
            "workers[0].mcp[0].env.TOKEN: a `$` starts an environment reference: write "
            "`${NAME}` for the variable NAME, or `$$` for a `$` itself",
        ),
        (
            'command = ["x"]\nenv = { TOKEN = "${1X}" }',
            11,
            "workers[0].mcp[0].env.TOKEN: `${1X}` names no environment variable",
        ),
        (
            'url = "https://${NO_SUCH_HOST}/mcp"',
            10,
            "workers[0].mcp[0].url: an environment reference may stand only for the URL's "
            "user, password or a query value",
        ),
    ],
)
def test_a_bad_reference_names_file_line_key_and_variable(
    tmp_path: Path,
    entry: str,
    line: int,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    path = team_file(tmp_path, entry)
    assert main(["validate", str(path), "--app-dir", str(REPO)]) == 2
    assert f"regiment: error: {path}:{line}: {message}" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        load_config(path)


def test_a_key_in_the_url_s_query_is_read_and_left_out_of_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_KEY", SECRET)
    path = team_file(tmp_path, 'url = "http://127.0.0.1:9/mcp?api_key=${MCP_KEY}"')
    (worker,) = load_team(path).workers
    assert isinstance(worker, Worker)
    (server,) = worker.mcp_servers
    assert server.name == "http://127.0.0.1:9/mcp?api_key=..."
    assert getattr(server.transport, "url", None) == f"http://127.0.0.1:9/mcp?api_key={SECRET}"
    assert SECRET not in repr(server.transport) + repr(load_config(path))


def test_expand_reads_defaults_and_dollars() -> None:
    env = {"A": "x", "EMPTY": ""}
    assert expand("${A}-${EMPTY:-d}-${B:-}-$$A-$${A}", "k", env) == "x-d--$A-${A}"
    assert expand("no references", "k", env) == "no references"
