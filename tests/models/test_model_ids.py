"""A provider model made with a blank model id or an empty key, and a model spec one slip
away from a good one, are refused saying what to write."""

from __future__ import annotations

import pytest

from regiment.errors import ConfigError
from regiment.models import AnthropicModel, NoCredentials, OpenAIModel, parse_model_spec


@pytest.mark.parametrize("model_id", ["", "   ", " gpt-4.1", "gpt-4.1\n"])
@pytest.mark.parametrize("kind", [AnthropicModel, OpenAIModel])
def test_a_model_id_that_names_no_model_is_refused(
    kind: type[AnthropicModel | OpenAIModel], model_id: str
) -> None:
    # Taken as it was: every call then failed with the API's 400 or 404 (an empty
    # id from an unset variable, AnthropicModel(os.environ.get("MODEL", "")), say).
    with pytest.raises(ConfigError) as caught:
        kind(model_id, api_key="k")
    example = "claude-sonnet-4-5" if kind is AnthropicModel else "gpt-4.1"
    assert str(caught.value) == (
        f"{kind.__name__}: the model id {model_id!r} names no model; give the provider's id "
        f"for it, e.g. {kind.__name__}({example!r})"
    )


def test_an_empty_anthropic_key_is_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # api_key="" was taken (OpenAIModel refused it): every call was then a 401.
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(NoCredentials, match="no Anthropic credentials found; set the "):
        AnthropicModel("claude-sonnet-4-5", api_key="")


@pytest.mark.parametrize(
    ("spec", "meant"),
    [
        ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("gpt-4.1", "openai:gpt-4.1"),
        ("OpenAI:gpt-4.1", "openai:gpt-4.1"),
        ("openai_compatible:llama3.1", "openai-compatible:llama3.1"),
        ("anthropc:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("scripted:brain", "scripted"),
    ],
)
def test_a_spec_one_slip_away_says_the_one_meant(spec: str, meant: str) -> None:
    # It listed every form, and left the user to find which one their spec missed.
    with pytest.raises(ConfigError) as caught:
        parse_model_spec(spec, where="--model")
    assert str(caught.value).endswith(f", got {spec!r} (did you mean {meant!r}?)")


@pytest.mark.parametrize("spec", ["llama3", "foo:bar", "anthropic:"])
def test_a_spec_with_no_close_form_lists_the_forms_only(spec: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_spec(spec, where="--model")
    assert str(caught.value).endswith(f", got {spec!r}")
