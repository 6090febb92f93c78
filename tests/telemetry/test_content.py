"""Content handling: the capture switch, redaction of secrets, truncation."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.errors import ConfigError
from regiment.telemetry import Telemetry, genai, redact
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


# Made up, in the shapes the providers issue (assembled so no scanner takes this file
# for a leak).
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SESSION_KEY = "ASIA" + "Y34FZKBOKMUTVV7A"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789"
SLACK_TOKEN = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE_KEY = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
JWT = (
    "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"aws key {AWS_KEY} here", AWS_KEY),
        (f"session {AWS_SESSION_KEY}", AWS_SESSION_KEY),
        (f"git push with {GITHUB_TOKEN}", GITHUB_TOKEN),
        (f"gho_{GITHUB_TOKEN[4:]} ghu_{GITHUB_TOKEN[4:]}", GITHUB_TOKEN[4:]),
        (f"ghs_{GITHUB_TOKEN[4:]}; ghr_{GITHUB_TOKEN[4:]}", GITHUB_TOKEN[4:]),
        (f"pat: {GITHUB_PAT}", GITHUB_PAT[11:]),
        (f"slack {SLACK_TOKEN}", SLACK_TOKEN[5:]),
        (f"xoxp-{SLACK_TOKEN[5:]}", SLACK_TOKEN[5:]),
        (f"maps?key={GOOGLE_KEY}&q=oslo", GOOGLE_KEY[4:]),
        (f"the session is {JWT}.", JWT[20:]),
        (
            f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
            PEM_BODY,
        ),
        (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}", PEM_BODY),  # cut before END
        ('{"password": "hunter 2", "user": "ann"}', "hunter"),
        ("{'client_secret': 'abc'}", "abc"),
        ('{"Access_Key": 123456}', "123456"),
        ("DB_PASSWORD=hunter2 then", "hunter2"),
        ("passwd = 'open sesame'", "sesame"),
        ("https://api.example.com/v1?access_token=abc123&page=2", "abc123"),
        ("export GITHUB_TOKEN=abc123def", "abc123def"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI"),
        ("apikey=zzz", "zzz"),
        ("private_key: correcthorsebatterystaple", "correcthorse"),
        ("password: hunter2", "hunter2"),
        ("X-Auth-Token: 7f3a9c", "7f3a9c"),
        ("SECRET: s3cr3t", "s3cr3t"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ],
)
def test_more_kinds_of_secrets_are_redacted(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert "[REDACTED]" in cleaned
    assert secret not in cleaned


def test_a_named_secret_keeps_its_name_and_the_json_stays_json() -> None:
    text = '{"password": "p\\"w", "apiKey": 12345, "user": "ann"}'
    assert json.loads(redact(text)) == {
        "password": "[REDACTED]",
        "apiKey": "[REDACTED]",
        "user": "ann",
    }
    assert redact("DB_PASSWORD=hunter2 next") == "DB_PASSWORD=[REDACTED] next"
    assert redact("x -----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY----- y") == (
        "x [REDACTED] y"
    )


@pytest.mark.parametrize(
    "text",
    [
        "refund order A-1 (task-sk) for 20 EUR; the bearer of this note",
        "the next token: a word, and the password field is required",
        "Token: expected a string.",
        "secret: none",
        "max_tokens=512, tokens: 120, token_count=5, input_tokens=9",
        "AKIA is a prefix; AKIA1234 is short; ghp_short; xoxb-1",
        "eyJ hello, a.b.c, eyJhbGciOiJIUzI1NiJ9 alone",
        "ask about api keys, secrets and passwords",
        "mytoken=abc, tokenizer: bpe",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_secret_named_field_of_a_json_value_is_redacted_whole() -> None:
    text = to_attribute_text({"user": "ann", "db_password": "hunter2", "token": 7}, 1000)
    assert json.loads(text) == {"user": "ann", "db_password": "[REDACTED]", "token": "[REDACTED]"}


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


def test_huge_content_costs_what_its_limit_costs(provider: TracerProvider) -> None:
    """Each string was redacted whole before it was cut: a 1 MB goal in every captured
    prompt ran every secret pattern over all of it (a minute of a run with a few such
    calls went there, the event loop held), and encoded it whole. Measured in memory,
    not time: what the recording allocates stays near its limit whatever the size."""
    huge = "a" * 95 + " " + KEY + " " + "b" * 4_000_000
    tail = f"{KEY} end"
    messages = [genai.chat_message("user", [genai.text_part(huge + tail)])]
    telemetry = Telemetry(provider, capture_content=True)
    recorder = telemetry.recorder
    with telemetry.span("s") as span:
        tracemalloc.start()
        try:
            recorder.chat_input(span, system=huge, messages=messages)
            recorder.check(span, passed=False, detail=huge)
            recorder.tool_result(span, {"content": huge})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        attributes = dict(span.attributes or {})  # type: ignore[attr-defined]
    assert peak < 400_000, peak  # the string alone is 4 MB; encoding it whole was as much again
    for key in ("gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.call.result"):
        text = str(attributes[key])
        assert len(text) <= telemetry.content_limit
        assert "...[truncated]" in text
        assert "sk-ant" not in text
        json.loads(text)  # still JSON
    assert "sk-ant" not in str(attributes["regiment.check.detail"])
