"""``regiment run --model PROVIDER:ID`` without the provider's key (or server URL) says what
a command-line user sets: the environment variable, not ``api_key=`` / ``base_url=`` of
code, which a team file has no key for."""

from __future__ import annotations

from pathlib import Path

import pytest

from regiment.errors import ConfigError
from regiment.models import NoCredentials, model_from_spec

from .helpers import run_cli

REPO = Path(__file__).resolve().parents[2]
TEAM = str(REPO / "examples" / "refund" / "team.toml")  # it has a brain

CASES = [
    ("openai:gpt-4o", "set OPENAI_API_KEY in the environment"),
    ("openai-compatible:llama", "set OPENAI_BASE_URL in the environment"),
    ("anthropic:claude-sonnet-4-5", "set ANTHROPIC_API_KEY in the environment"),
]
UNSET = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@pytest.mark.anyio
@pytest.mark.parametrize(("spec", "advice"), CASES)
async def test_the_cli_names_what_to_set(
    spec: str, advice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in UNSET:  # the SDKs read the process's own environment
        monkeypatch.delenv(name, raising=False)
    code, out, err = await run_cli("run", TEAM, "goal", "--model", spec, "--no-journal")
    assert (code, out) == (2, ""), err
    (line,) = err.splitlines()
    assert line.startswith(f"regiment: error: {TEAM}: --model: "), line
    assert advice in line
    # It said "pass OpenAIModel(..., api_key=...)" / "give base_url": code's, not a user's.
    assert "api_key=" not in line
    assert "base_url" not in line
    assert "Model(" not in line
    assert line.endswith("; or run offline on the file's brain: --model scripted")


def test_code_keeps_the_advice_for_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(NoCredentials) as caught:
        model_from_spec("openai:gpt-4o")
    assert isinstance(caught.value, ConfigError)  # what it always was
    assert caught.value.env == "OPENAI_API_KEY"
    assert "OpenAIModel(..., api_key=...)" in str(caught.value)
