"""The built-in guardrails: PII redaction (with a property test), the length
limit, the step-order plan policy, the JSON-schema check of tool results; and
the guardrail events' JSON round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regiment.errors import ConfigError
from regiment.hierarchy import (
    AnswerSubject,
    GuardrailRewrote,
    GuardrailTripped,
    PlanStep,
    PlanSubject,
    RequestSubject,
    Rewrite,
    ToolResultSubject,
    event_from_json,
    to_json,
)
from regiment.hierarchy.guard import (
    Pass,
    Trip,
    max_length,
    redact_pii,
    requires_step_before,
    tool_result_schema,
)
from regiment.hierarchy.guard._builtin import redact
from regiment.models import Message, ToolResultPart


def test_redact_replaces_emails_phones_and_card_numbers() -> None:
    text = (
        "Mail ann.lee+shop@example.co.uk or call +44 20 7946 0958; "
        "card 4111 1111 1111 1111 (order 88213, 2024-05-01)"
    )
    assert redact(text) == (
        "Mail [e-mail] or call [phone number]; card [card number] (order 88213, 2024-05-01)"
    )


def test_a_digit_run_that_fails_luhn_is_not_a_card() -> None:
    assert redact("ref 4111 1111 1111 1112", phones=False) == "ref 4111 1111 1111 1112"


@given(st.lists(st.integers(0, 255), min_size=4, max_size=4))
def test_an_ip_address_is_no_phone_number(octets: list[int]) -> None:
    # 192.168.100.200 has twelve digits and dots between them, as 415.555.0100 does: the
    # redactor took it for a phone number, so a worker asked about a server got none.
    address = ".".join(map(str, octets))
    assert redact(f"ping {address}, then call 415.555.0100") == (
        f"ping {address}, then call [phone number]"
    )


_local = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._", min_size=1, max_size=12)
_host = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=10)


@given(
    before=st.text(alphabet="abc ,;:!?", max_size=20),
    local=_local,
    host=_host,
    tld=st.sampled_from(["com", "org", "io", "co.uk"]),
)
def test_no_email_address_survives_redaction(before: str, local: str, host: str, tld: str) -> None:
    address = f"{local}@{host}.{tld}"
    out = redact(f"{before} {address} {before}")
    assert address not in out
    assert "@" not in out


def request(*texts: str) -> RequestSubject:
    return RequestSubject(
        role="worker",
        worker="w",
        step_id="s1",
        system="sys",
        messages=tuple(Message.user(t) for t in texts),
    )


def test_the_redactor_rewrites_text_and_tool_results_and_passes_clean_requests() -> None:
    guard = redact_pii()
    assert guard.kind == "model_request"
    assert guard.check(request("nothing personal")) == Pass()
    results = Message.tool_results((ToolResultPart(call_id="c", content="bob@example.com"),))
    subject = RequestSubject(
        role="worker",
        worker="w",
        step_id="s1",
        system="",
        messages=(Message.user("write to bob@example.com"), results),
    )
    out = guard.check(subject)
    assert isinstance(out, Rewrite)
    assert [m.text for m in out.subject.messages] == ["write to [e-mail]", ""]
    part = out.subject.messages[1].parts[0]
    assert isinstance(part, ToolResultPart)
    assert part.content == "[e-mail]"


def test_max_length() -> None:
    guard = max_length(10)
    assert guard.check(AnswerSubject(goal="g", text="short")) == Pass()
    assert guard.check(AnswerSubject(goal="g", text="far too long")) == Trip(
        "12 characters, over the limit of 10"
    )
    assert max_length(5, "model_request").check(request("abc")) == Trip(
        "6 characters, over the limit of 5"
    )
    with pytest.raises(ConfigError, match="limit must be at least 1"):
        max_length(0)
    with pytest.raises(ConfigError, match="not 'plan'"):
        max_length(5, "plan")


def step(id: str, description: str, *after: str) -> PlanStep:
    return PlanStep(id=id, description=description, worker="billing", depends_on=after)


def plan(*steps: PlanStep, committed: tuple[PlanStep, ...] = ()) -> PlanSubject:
    return PlanSubject(goal="g", version=1, steps=steps, committed=committed)


def test_refunds_need_an_eligibility_step_before_them() -> None:
    guard = requires_step_before(
        "issue_refund",
        "check_eligibility",
        mentions=["refund the", "issue the refund"],
        first_mentions=["eligibility"],
    )
    assert guard.name == "issue_refund_requires_check_eligibility"
    ok = plan(step("s1", "Check refund eligibility"), step("s2", "Issue the refund", "s1"))
    assert guard.check(ok) == Pass()
    bad = plan(step("s1", "Issue the refund"), step("s2", "Check refund eligibility"))
    out = guard.check(bad)
    assert isinstance(out, Trip)
    assert "step s1 uses issue_refund but no step before it uses check_eligibility" in out.reason
    chained = plan(
        step("s1", "Check eligibility"),
        step("s2", "note", "s1"),
        step("s3", "Issue the refund", "s2"),
    )
    assert guard.check(chained) == Pass()
    after_commit = plan(
        step("s2", "Issue the refund"), committed=(step("s1", "Check refund eligibility"),)
    )
    assert guard.check(after_commit) == Pass()


def result(content: object, *, is_error: bool = False, tool: str = "lookup") -> ToolResultSubject:
    return ToolResultSubject(
        worker="w",
        step_id="s1",
        tool=tool,
        arguments={},
        content=content,  # type: ignore[arg-type]
        is_error=is_error,
    )


def test_tool_result_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "number"}},
        "required": ["amount"],
    }
    guard = tool_result_schema(schema, tools=["lookup"])
    assert guard.on_trip == "tell_model"
    assert guard.check(result({"amount": 3})) == Pass()
    out = guard.check(result({"amount": "three"}))
    assert isinstance(out, Trip)
    assert out.reason == (
        "lookup returned data that does not match its schema: "
        'amount: Input should be a number (got "three")'
    )
    assert guard.check(result("oops", is_error=True)) == Pass()
    assert guard.check(result("anything", tool="other")) == Pass()
    with pytest.raises(ConfigError, match="not valid JSON Schema"):
        tool_result_schema({"type": 5})


def test_guardrail_events_round_trip_through_json() -> None:
    tripped = GuardrailTripped(
        run_id="r", guardrail="g", subject="tool_call", reason="no", worker="w", step_id="s1"
    )
    rewrote = GuardrailRewrote(run_id="r", guardrail="g", subject="plan", role="planner")
    assert event_from_json(to_json(tripped)) == tripped
    assert event_from_json(to_json(rewrote)) == rewrote
