"""ModelSettings: validation, merging, building from a mapping; model specs."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from regiment.errors import ConfigError
from regiment.models import (
    Message,
    ModelRequest,
    ModelSettings,
    OpenAIModel,
    ScriptedModel,
    effective_settings,
    model_from_spec,
    parse_model_spec,
)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_tokens": 0}, "'max_tokens' must be at least 1"),
        ({"temperature": -0.1}, "'temperature' must be at least 0 and at most 2"),
        ({"temperature": 2.5}, "'temperature' must be at least 0 and at most 2"),
        ({"temperature": float("nan")}, "'temperature'"),
        ({"top_p": 0.0}, "'top_p' must be above 0 and at most 1"),
        ({"timeout": 0.0}, "'timeout' must be a number of seconds above 0"),
        ({"thinking_budget": 1000}, "'thinking_budget' must be at least 1024"),
        ({"stop_sequences": ("END", "")}, "empty string"),
        ({"extra": {"temperature": 1}}, "'extra' repeats 'temperature'"),
        # the body fields every call builds: replacing them dropped the conversation
        ({"extra": {"messages": []}}, "'extra' may not give 'messages'"),
        ({"extra": {"model": "x", "stream": False}}, "may not give 'model', 'stream'"),
        ({"extra": {"tools": {"type": "web_search_20250305"}}}, "a list of tool objects"),
        ({"extra": {"tools": ["web_search"]}}, "a list of tool objects"),
        # values of the wrong type: each was a TypeError from a comparison
        (
            {"temperature": "hot"},
            "'temperature' must be a number at least 0 and at most 2, got 'hot'",
        ),
        ({"top_p": "1"}, "'top_p' must be a number above 0 and at most 1, got '1'"),
        ({"max_tokens": "5"}, "'max_tokens' must be a whole number, at least 1, got '5'"),
        (
            {"thinking_budget": 2048.5},
            "'thinking_budget' must be a whole number, at least 1024, got 2048.5",
        ),
        ({"timeout": "5"}, "'timeout' must be a number of seconds above 0, got '5'"),
    ],
)
def test_out_of_range_settings_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelSettings(**fields)  # type: ignore[arg-type]


def test_from_mapping_names_an_unknown_key_and_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        ModelSettings.from_mapping(
            {"max_tokens": 10, "temprature": 0.5}, where="team.toml: planner.settings"
        )
    text = str(caught.value)
    assert text.startswith("team.toml: planner.settings.temprature: unknown setting 'temprature'")
    assert "temperature" in text
    assert "extra" in text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"max_tokens": "many"}, r"settings.max_tokens: expected `int \| null`, got `str`"),
        ({"top_p": 3}, "settings.top_p: must be above 0 and at most 1"),
        ({"extra": {"tools": 3}}, "settings.extra.tools: must be a list of tool objects"),
    ],
)
def test_from_mapping_says_where_a_bad_value_is(data: dict[str, object], message: str) -> None:
    # The key in the path, as a team file's other errors have it (the command finds its line).
    with pytest.raises(ConfigError, match=message) as caught:
        ModelSettings.from_mapping(data, where="team.toml: settings")
    assert str(caught.value).startswith("team.toml: settings.")


def test_from_mapping_builds_the_settings() -> None:
    settings = ModelSettings.from_mapping(
        {"max_tokens": 2000, "stop_sequences": ["END"], "extra": {"top_k": 5}}
    )
    assert settings == ModelSettings(max_tokens=2000, stop_sequences=("END",), extra={"top_k": 5})


def test_merge_puts_what_is_set_on_top() -> None:
    defaults = ModelSettings(max_tokens=1000, temperature=0.7, extra={"a": 1, "b": 2})
    role = ModelSettings(temperature=0.0, extra={"b": 3})
    assert defaults.merge(role) == ModelSettings(
        max_tokens=1000, temperature=0.0, extra={"a": 1, "b": 3}
    )
    assert defaults.merge(None) is defaults
    assert defaults.merge(ModelSettings()) == defaults


_settings = st.builds(
    ModelSettings,
    max_tokens=st.none() | st.integers(1, 10_000),
    temperature=st.none() | st.floats(0, 2),
    top_p=st.none() | st.floats(0.01, 1),
    extra=st.dictionaries(st.sampled_from(["x", "y", "z"]), st.integers()),
)


@given(_settings, _settings, _settings)
def test_merge_is_associative_and_the_top_layer_wins(
    a: ModelSettings, b: ModelSettings, c: ModelSettings
) -> None:
    assert a.merge(b).merge(c) == a.merge(b.merge(c))
    top = a.merge(b)
    for name in ("max_tokens", "temperature", "top_p"):
        assert getattr(top, name) == (
            getattr(b, name) if getattr(b, name) is not None else getattr(a, name)
        )


def test_effective_settings_layers_request_fields_model_and_role() -> None:
    request = ModelRequest(
        messages=(Message.user("hi"),),
        max_tokens=300,
        temperature=0.2,
        stop_sequences=("X",),
        settings=ModelSettings(temperature=0.9),
    )
    merged = effective_settings(ModelSettings(max_tokens=800, top_p=0.5), request)
    assert (merged.max_tokens, merged.temperature, merged.top_p, merged.stop_sequences) == (
        800,
        0.9,
        0.5,
        ("X",),
    )


def test_settings_and_roles_travel_with_a_request() -> None:
    request = ModelRequest(
        messages=(Message.user("hi"),),
        role="worker",
        worker="billing",
        step_id="s1",
        settings=ModelSettings(max_tokens=5),
    )
    decoded = msgspec.json.decode(msgspec.json.encode(request), type=ModelRequest)
    assert decoded == request


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("anthropic:claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("openai:gpt-4.1", ("openai", "gpt-4.1")),
        ("openai-compatible:llama3.1:8b", ("openai-compatible", "llama3.1:8b")),
        ("scripted", ("scripted", "")),
    ],
)
def test_model_specs_parse(spec: str, parsed: tuple[str, str]) -> None:
    assert parse_model_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["gpt-4", "openai:", "anthropic: ", "mistral:large", ""])
def test_bad_model_specs_name_the_forms(spec: str) -> None:
    with pytest.raises(
        ConfigError,
        match=r"--model: expected 'anthropic:<model id>'.*'openai:<model id>'.*'scripted'",
    ):
        parse_model_spec(spec, where="--model")


def test_model_from_spec_builds_each_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = ModelSettings(max_tokens=10)
    claude = model_from_spec("anthropic:claude-x", settings=settings)
    assert (claude.provider, claude.name) == ("anthropic", "claude-x")
    gpt = model_from_spec("openai:gpt-x")
    assert isinstance(gpt, OpenAIModel)
    assert gpt.provider == "openai"
    local = model_from_spec(
        "openai-compatible:llama", environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    assert isinstance(local, OpenAIModel)
    assert str(local.client.base_url) == "http://127.0.0.1:9/v1/"
    assert isinstance(model_from_spec("scripted", script=lambda request: "ok"), ScriptedModel)


def test_model_from_spec_says_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="needs the server's base URL"):
        model_from_spec("openai-compatible:llama", where="team.toml: model", environ={})
    with pytest.raises(ConfigError, match="needs a script function"):
        model_from_spec("scripted")
