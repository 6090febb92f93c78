"""Content handling: the capture switch, redaction of secrets, truncation."""

from __future__ import annotations

import pytest

from regiment.errors import ConfigError
from regiment.telemetry import redact
from regiment.telemetry._content import capture_from_env, to_attribute_text, truncate

KEY = "sk-ant-api03-" + "Zz9_-" * 10


@pytest.mark.parametrize(
    "text",
    [
        f"my key is {KEY} ok",
        f'{{"x-api-key": "{KEY}"}}',
        "X-Api-Key: abcdef0123456789",
        "api_key=abcdef0123456789",
        "Authorization: Bearer eyJhbGciOi.payload.sig",
        "curl -H 'authorization: bearer abc.def_ghi'",
        "sk-proj-0123456789abcdef",
    ],
)
def test_secrets_are_redacted(text: str) -> None:
    cleaned = redact(text)
    assert "[REDACTED]" in cleaned
    for secret in (KEY, "abcdef0123456789", "eyJhbGciOi", "abc.def_ghi", "sk-proj"):
        assert secret not in cleaned


def test_ordinary_text_is_left_alone() -> None:
    text = "refund order A-1 (task-sk) for 20 EUR; the bearer of this note"
    assert redact(text) == text


def test_truncate_keeps_to_the_limit_and_says_so() -> None:
    assert truncate("short", 10) == "short"
    cut = truncate("x" * 50, 30)
    assert len(cut) == 30
    assert cut.endswith("...[truncated]")
    assert truncate("x" * 50, 5) == "xxxxx"


def test_a_key_straddling_the_limit_is_still_redacted() -> None:
    text = "a" * 95 + " " + KEY
    assert "sk-ant" not in to_attribute_text(text, 100)
    assert len(to_attribute_text(text, 100)) == 100


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("TRUE", True), ("span_only", True), ("false", False), ("", False)],
)
def test_capture_variable(value: str, expected: bool) -> None:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
    assert capture_from_env(env) is expected
    assert capture_from_env({}) is False


def test_a_capture_variable_that_is_neither_true_nor_false_is_refused() -> None:
    with pytest.raises(ConfigError, match="set it to 'true'"):
        capture_from_env({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "sometimes"})
