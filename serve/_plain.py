"""msgspec's validation errors said in plain words, keeping the field's path."""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

__all__ = ("plain_problem",)

_KINDS = {
    "str": "a string",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "null": "null",
    "object": "a JSON object",
    "array": "an array",
}
_AT = r"(?: - at `(?P<at>[^`]+)`)?$"
_EXPECTED = re.compile(r"Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`" + _AT)
_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]+)`" + _AT)
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<name>[^`]+)`" + _AT)
_ENUM = re.compile(r"Invalid enum value (?P<value>.+?)" + _AT)
_RANGE = re.compile(r"Number out of range" + _AT)
_NO_WANTS: Mapping[str, tuple[str, str]] = {}


def plain_problem(
    exc: msgspec.ValidationError, kind: type, wants: Mapping[str, tuple[str, str]] = _NO_WANTS
) -> str:
    """What ``exc`` (a body decoded as ``kind``) says, as a sentence: which field, at
    which path, is wrong and what it should be (``wants``: by path, what a field takes
    said better than its type says it, and a note on it). Text it does not know is kept."""
    text = str(exc)
    if found := _EXPECTED.match(text):
        want = " or ".join(_KINDS.get(t, t) for t in found["want"].split(" | "))
        want, note = wants.get(found["at"] or "$", (want, ""))
        got = _KINDS.get(found["got"], found["got"])
        return f"{_field(found['at'])} must be {want}, not {got}{note}"
    if found := _MISSING.match(text):
        return f"{_field(_child(found['at'], found['name']))} is required but missing"
    if found := _UNKNOWN.match(text):
        return f"{_field(_child(found['at'], found['name']))} is not a field this route takes"
    if found := _RANGE.match(text):
        return f"{_field(found['at'])} holds a number too large to read (past 1.8e308)"
    if found := _ENUM.match(text):
        at = found["at"] or "$"
        return f"{_field(at)} must be {_choices(kind, at)}, not {found['value']}"
    return text


def _field(at: str | None) -> str:
    if at is None or at == "$":
        return "the body"
    return f"the field {at.removeprefix('$.')!r} (at {at})"


def _child(at: str | None, name: str) -> str:
    return f"{at or '$'}.{name}"


def _choices(kind: type, at: str) -> str:
    """The values a top-level literal field of ``kind`` takes, as words."""
    info = msgspec.inspect.type_info(kind)
    if isinstance(info, msgspec.inspect.StructType):
        for field in info.fields:
            if f"$.{field.encode_name}" == at and isinstance(
                field.type, msgspec.inspect.LiteralType
            ):
                return "one of " + ", ".join(repr(v) for v in field.type.values)
    return "one of the values it takes"
