"""Guardrails most teams need: a PII redactor, a length limit, a step-order
policy for plans, and a JSON-schema check for tool results."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from regiment._json_problems import schema_problems
from regiment.errors import ConfigError
from regiment.hierarchy.guard._note import SubjectKind
from regiment.hierarchy.guard._types import (
    AnswerSubject,
    Guardrail,
    OnTrip,
    Outcome,
    Pass,
    PlanSubject,
    ReplySubject,
    RequestSubject,
    Rewrite,
    ToolResultSubject,
    Trip,
    inline,
)
from regiment.hierarchy.plan._plan import PlanStep
from regiment.models import Message, TextPart, ToolResultPart

__all__ = ("max_length", "redact_pii", "requires_step_before", "tool_result_schema")

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}\b")
_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d\b")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")  # dotted like a phone number, but a host


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group())
    return "[card number]" if _luhn(digits) else match.group()


def _phone(match: re.Match[str]) -> str:
    if _IPV4.fullmatch(match.group()):  # 192.168.100.200: a worker's server, no one to call
        return match.group()
    digits = re.sub(r"\D", "", match.group())
    return "[phone number]" if 9 <= len(digits) <= 15 else match.group()


def redact(text: str, *, emails: bool = True, phones: bool = True, cards: bool = True) -> str:
    """``text`` with e-mail addresses, card numbers (Luhn-valid) and phone numbers
    replaced by ``[e-mail]``, ``[card number]`` and ``[phone number]``."""
    if emails:
        text = _EMAIL.sub("[e-mail]", text)
    if cards:
        text = _CARD.sub(_card, text)
    if phones:
        text = _PHONE.sub(_phone, text)
    return text


def redact_pii(
    *, emails: bool = True, phones: bool = True, cards: bool = True, name: str = "redact_pii"
) -> Guardrail:
    """A model-request guard that rewrites e-mail addresses, phone numbers and card
    numbers out of every text and tool result the model would see."""

    def clean(text: str) -> str:
        return redact(text, emails=emails, phones=phones, cards=cards)

    def check(subject: RequestSubject) -> Outcome:
        messages = tuple(_clean_message(m, clean) for m in subject.messages)
        system = clean(subject.system)
        if messages == subject.messages and system == subject.system:
            return Pass()
        return Rewrite(dataclasses.replace(subject, system=system, messages=messages))

    return Guardrail(inline(check), "model_request", name=name)


def _clean_message(message: Message, clean: Any) -> Message:
    parts = tuple(
        TextPart(text=clean(p.text))
        if isinstance(p, TextPart)
        else ToolResultPart(call_id=p.call_id, content=clean(p.content), is_error=p.is_error)
        if isinstance(p, ToolResultPart)
        else p
        for p in message.parts
    )
    return message if parts == message.parts else Message(role=message.role, parts=parts)


def _text_of(subject: object) -> str:
    match subject:
        case RequestSubject(system=system, messages=messages):
            return system + "".join(m.text for m in messages)
        case ReplySubject() | AnswerSubject():
            return subject.text
        case ToolResultSubject(content=content):
            return content if isinstance(content, str) else repr(content)
    raise TypeError(f"max_length cannot measure a {type(subject).__name__}")


def max_length(
    limit: int,
    kind: SubjectKind = "answer",
    *,
    on_trip: OnTrip = "fail_step",
    name: str = "max_length",
) -> Guardrail:
    """Trip when the subject's text is longer than ``limit`` characters (for a model
    request: its system prompt and all message text together)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigError(
            f"max_length: limit must be at least 1, a whole number of characters, not {limit!r}"
        )
    if kind not in ("model_request", "model_reply", "tool_result", "answer"):
        raise ConfigError(
            f"max_length measures model_request, model_reply, tool_result or answer, not {kind!r}"
        )

    def check(subject: object) -> Outcome:
        size = len(_text_of(subject))
        return Pass() if size <= limit else Trip(f"{size} characters, over the limit of {limit}")

    return Guardrail(inline(check), kind, name=name, on_trip=on_trip)


def _mentions(step: PlanStep, words: Iterable[str]) -> bool:
    text = step.description.lower()
    return any(w.lower() in text for w in words)


def _words(tool: str, given: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(given) if given is not None else (tool, tool.replace("_", " "))


def requires_step_before(
    tool: str,
    first: str,
    *,
    mentions: Iterable[str] | None = None,
    first_mentions: Iterable[str] | None = None,
    name: str = "",
) -> Guardrail:
    """A plan guard: a step that uses ``tool`` must come after (depend on, directly
    or not) a step that uses ``first``, or ``first`` must be in a committed step.

    A step uses a tool when its description mentions it: the tool's name, with
    or without underscores, or the words in ``mentions`` / ``first_mentions``.
    """
    then_words, first_words = _words(tool, mentions), _words(first, first_mentions)

    def check(subject: PlanSubject) -> Outcome:
        if any(_mentions(s, first_words) for s in subject.committed):
            return Pass()
        by_id = {s.id: s for s in subject.steps}
        for step in subject.steps:
            if _mentions(step, then_words) and not _after(step, by_id, first_words):
                return Trip(
                    f"step {step.id} uses {tool} but no step before it uses {first}; "
                    f"add a {first} step and make step {step.id} depend on it"
                )
        return Pass()

    return Guardrail(inline(check), "plan", name=name or f"{tool}_requires_{first}")


def _after(step: PlanStep, by_id: Mapping[str, PlanStep], words: tuple[str, ...]) -> bool:
    seen: set[str] = set()
    todo = list(step.depends_on)
    while todo:
        current = todo.pop()
        if current in seen or current not in by_id:
            continue
        seen.add(current)
        if _mentions(by_id[current], words):
            return True
        todo.extend(by_id[current].depends_on)
    return False


def tool_result_schema(
    schema: Mapping[str, object],
    *,
    tools: Iterable[str] | None = None,
    on_trip: OnTrip = "tell_model",
    name: str = "tool_result_schema",
) -> Guardrail:
    """A tool-result guard: trip unless the result validates against the JSON
    ``schema`` (errors are left alone; ``tools`` limits it to those tools).

    Needs jsonschema: ``pip install 'regiment[guardrails]'``.
    """
    try:
        import jsonschema
    except ImportError as exc:
        raise ConfigError(
            "the JSON-schema guardrail needs jsonschema: pip install 'regiment[guardrails]'"
        ) from exc
    try:
        validator_class = jsonschema.validators.validator_for(dict(schema))
        validator_class.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"{name}: the schema is not valid JSON Schema: {exc.message}") from exc
    validator = validator_class(dict(schema))
    only = None if tools is None else frozenset(tools)

    def check(subject: ToolResultSubject) -> Outcome:
        if subject.is_error or (only is not None and subject.tool not in only):
            return Pass()
        error = jsonschema.exceptions.best_match(validator.iter_errors(subject.content))
        if error is None:
            return Pass()
        # Worded as a model reads JSON (``"three"``, not ``'three'``): it is told the reason.
        (problem, *_) = schema_problems([error], 1, whole="result")
        return Trip(f"{subject.tool} returned data that does not match its schema: {problem}")

    return Guardrail(inline(check), "tool_result", name=name, on_trip=on_trip)
