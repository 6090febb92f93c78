"""A stdio server's command line may carry a secret (``--token X``, ``--api-key=X``, a
database URL's password), and its ``env`` values may be secrets: the command line names
the server (its name by default) in errors, logs, spans, tool results, events and
``regiment validate``, so the secret arguments are ``[REDACTED]`` there and env values
are never shown. Spans and logs go through the real OTLP exporter to a local receiver."""

from __future__ import annotations

import json
import logging
import shlex
import sys
import uuid
from pathlib import Path

import pytest

from regiment.cli import main
from regiment.config._schema import parse_config
from regiment.errors import RegimentError
from regiment.hierarchy import Planner, Team, Worker
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart
from regiment.models import tool_call_response as call
from regiment.telemetry import Telemetry, configure_tracing
from regiment.tools import MCPServer
from tests.telemetry.otlp_receiver import OtlpReceiver

from .brain import Brain, plan_json
from .conftest import SERVER_COMMAND
from .test_mcp_team_file import REPO, TEAM

pytestmark = pytest.mark.anyio

SECRET = f"tok-{uuid.uuid4().hex}"
IN_ENV = f"env-{uuid.uuid4().hex}"


def test_the_name_and_reprs_show_no_secret_argument_nor_env_value() -> None:
    server = MCPServer.stdio(
        [*SERVER_COMMAND, "--token", SECRET, f"--api-key={SECRET}", "--port", "7"],
        [f"postgresql://app:{SECRET}@db/runs", "-H", f"Authorization: Bearer {SECRET}"],
        env={"API_TOKEN": IN_ENV},
    )
    shown = [server.name, repr(server), repr(server.transport), server.transport.describe()]
    assert [text for text in shown if SECRET in text or IN_ENV in text] == []
    assert server.name == shlex.join(SERVER_COMMAND) + (
        " --token [REDACTED] '--api-key=[REDACTED]' --port 7"
        " 'postgresql://app:[REDACTED]@db/runs' -H 'Authorization: [REDACTED]'"
    )
    assert "env=['API_TOKEN']" in repr(server.transport)


@pytest.mark.parametrize("capture", [False, True])
async def test_a_run_whose_unnamed_server_crashes_shows_no_secret(
    capture: bool, caplog: pytest.LogCaptureFixture
) -> None:
    server = MCPServer.stdio([*SERVER_COMMAND, "--token", SECRET], env={"API_TOKEN": IN_ENV})

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        return f"saw: {results[0].content}" if results else call("crash", {})

    model = ScriptedModel(Brain([plan_json({"id": "s1", "description": "crash it"})], work=work))
    worker = Worker(name="w", description="calls", model=model, tools=[server])
    with OtlpReceiver() as receiver:
        handle = configure_tracing("mcp", endpoint=receiver.endpoint, set_global=False, logs=True)
        team = Team(
            name="t",
            planner=Planner(model=model),
            workers=[worker],
            telemetry=Telemetry(handle.provider, capture_content=capture),
        )
        events = []
        with caplog.at_level(logging.DEBUG):
            async with team.start() as running, running.stream("go") as stream:
                events = [repr(event) async for event in stream]
        handle.shutdown()
        spans, logs = receiver.spans(), receiver.logs()
    # the crash's result named the server, as the model and the events saw it
    assert any("broke during the call" in e and "[REDACTED]" in e for e in events), events
    texts = [*events, *(r.getMessage() for r in caplog.records)]
    texts += [
        json.dumps([s.name, s.status_message, s.attributes, s.events], default=str) for s in spans
    ]
    texts += [f"{log.body} {log.attributes}" for log in logs]
    assert any("[REDACTED]" in s.name for s in spans)  # regiment.mcp.start <command line>
    assert [text for text in texts if SECRET in text or IN_ENV in text] == []


async def test_a_server_that_cannot_start_names_its_command_without_the_secret() -> None:
    failing = [sys.executable, "-c", "raise SystemExit(3)", "--password", SECRET]
    model = ScriptedModel(Brain([plan_json({"description": "x"})], work=lambda *_: "x"))  # type: ignore[arg-type]
    worker = Worker(name="w", description="calls", model=model, tools=[MCPServer.stdio(failing)])
    team = Team(name="t", planner=Planner(model=model), workers=[worker])
    with pytest.raises(RegimentError) as raised:
        await team.run("go")
    assert "could not be started" in str(raised.value)
    assert "--password [REDACTED]" in str(raised.value)
    assert SECRET not in str(raised.value)


def test_validate_lists_the_server_without_the_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = tmp_path / "team.toml"
    command = json.dumps(["true", "--auth-token", SECRET])
    mcp = f'[[workers.mcp]]\ncommand = {command}\nenv = {{ API_TOKEN = "{IN_ENV}" }}\n'
    team.write_text(TEAM.format(mcp=mcp))
    assert main(["validate", str(team), "--app-dir", str(REPO)]) == 0
    out = capsys.readouterr().out
    assert "MCP server 'true --auth-token [REDACTED]'" in out, out
    assert [s for s in (SECRET, IN_ENV) if s in out] == []
    entry = repr(parse_config(TEAM.format(mcp=mcp), format="toml", source="team.toml"))
    assert "command=('true', '...')" in entry, entry
    assert "env={'API_TOKEN': '...'}" in entry, entry
    assert [s for s in (SECRET, IN_ENV) if s in entry] == []
