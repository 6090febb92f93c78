"""Model specs in team files and ``--model``: one parser (``regiment.models``), every provider,
and roles that mix providers."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from regiment.cli import run_async
from regiment.config import build_team, parse_config
from regiment.errors import ConfigError
from regiment.hierarchy import Worker
from regiment.models import AnthropicModel, OpenAIModel

from ..models import chat_api
from ..models.standin import StandIn, serve

pytestmark = pytest.mark.anyio

MIXED = """
name = "mixed"
model = "anthropic:claude-sonnet-4-5"

[planner]
synthesizer_model = "openai-compatible:llama-test"

[[workers]]
name = "writer"
description = "writes"
model = "openai:gpt-4.1"

[[workers]]
name = "checker"
description = "checks"
"""


def test_roles_may_mix_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    team = build_team(parse_config(MIXED, format="toml", source="mixed.toml"), source="mixed.toml")

    planner = team.planner
    writer, checker = team.workers
    assert isinstance(writer, Worker)
    assert isinstance(checker, Worker)
    assert isinstance(planner.model, AnthropicModel)
    assert planner.model.name == "claude-sonnet-4-5"
    assert checker.model is planner.model  # one spec, one model (and one client)
    assert isinstance(writer.model, OpenAIModel)
    assert writer.model.name == "gpt-4.1"
    synthesizer = planner.synthesizer_model
    assert isinstance(synthesizer, OpenAIModel)
    assert synthesizer.name == "llama-test"
    assert str(getattr(synthesizer, "base_url", "")).startswith("http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (
            'model = "openai:gpt-4.1"',
            "mixed.toml: workers[0].model: expected 'anthropic:<model id>' (e.g. "
            "'anthropic:claude-sonnet-4-5'), 'openai:<model id>'",
        ),
        (
            'synthesizer_model = "openai-compatible:llama-test"',
            "mixed.toml: planner.synthesizer_model: expected 'anthropic:<model id>'",
        ),
    ],
)
def test_a_bad_spec_names_its_key_and_every_form(
    replace: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    key = replace.split(" = ")[0]
    text = MIXED.replace(replace, f'{key} = "gpt-4.1"')
    with pytest.raises(ConfigError) as caught:
        build_team(parse_config(text, format="toml", source="mixed.toml"), source="mixed.toml")
    assert message in str(caught.value)
    assert "'openai-compatible:<model id>'" in str(caught.value)


def test_openai_compatible_without_a_base_url_says_how_to_give_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError) as caught:
        build_team(parse_config(MIXED, format="toml", source="mixed.toml"), source="mixed.toml")
    text = str(caught.value)
    assert text.startswith("mixed.toml: planner.synthesizer_model: 'openai-compatible:llama-test'")
    assert "OPENAI_BASE_URL" in text


@pytest.fixture
async def chat() -> AsyncIterator[StandIn]:
    async for server in serve(chat_api.error(500, "server_error", "nothing queued")):
        yield server


async def test_run_with_model_openai_compatible_talks_to_the_server(
    chat: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{chat.base_url}/v1")
    plan = json.dumps({"steps": [{"id": "s1", "description": "write it", "worker": "writer"}]})
    chat.queue(
        chat_api.completion(plan),
        chat_api.completion("the draft"),
        chat_api.completion("The answer, written by a local server."),
    )
    team = tmp_path / "team.toml"
    team.write_text(MIXED, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", str(team), "the goal", "--model", "openai-compatible:llama-test", "--plain"]
    code = await run_async(argv, stdout=out, stderr=err, environ={})

    assert code == 0, err.getvalue()
    assert out.getvalue() == "The answer, written by a local server.\n"
    assert [r.path for r in chat.requests] == ["/v1/chat/completions"] * 3
    assert {r.body["model"] for r in chat.requests} == {"llama-test"}
    assert all(r.body.get("stream") is True for r in chat.requests)


async def test_run_with_a_worker_model_the_server_does_not_have_fails_at_once(
    chat: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{chat.base_url}/v1")
    plan = json.dumps({"steps": [{"id": "s1", "description": "write it", "worker": "writer"}]})
    missing = "The model `llama-typo` does not exist"
    chat.queue(chat_api.completion(plan), chat_api.error(404, "invalid_request_error", missing))
    team = tmp_path / "team.toml"
    team.write_text(
        'name = "local"\nmodel = "openai-compatible:llama-test"\n\n[[workers]]\n'
        'name = "writer"\ndescription = "writes"\nmodel = "openai-compatible:llama-typo"\n',
        encoding="utf-8",
    )
    out, err = io.StringIO(), io.StringIO()
    code = await run_async(["run", str(team), "the goal", "--plain"], stdout=out, stderr=err)

    assert code == 1
    said = err.getvalue().splitlines()[-1]
    assert said.startswith("regiment: run failed: StepFailed: step s1 (write it) ended failed:")
    assert missing in said
    assert "check the model name and base_url" in said
    assert "the run ends without a replan: worker 'writer'" in said
    assert [r.body["model"] for r in chat.requests] == ["llama-test", "llama-typo"]
