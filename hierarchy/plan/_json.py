"""Reading a plan out of the JSON in a planner's reply (the first thing the parser tries).

Two kinds of reply:

- One that *is* JSON: it starts with ``{`` or ``[``, or carries a ``json``
  code fence (or a fence whose body starts with a bracket). It is read as
  JSON only: the value at its start (or the fence's body) must be a plan, else
  the reading is an error that says what was wrong, never a line-read step.
- One that is a JSON literal alone (``null``, ``true``, ``false``, a number): JSON
  that is not a plan, an error as well, never a step of that text.
- Prose that may hold a plan: the first balanced array or object that decodes
  *and* looks like a plan wins. JSON inside a numbered or bulleted line is that
  step's text, not a plan. When nothing plan-shaped is found the parser falls
  back to reading lines.

The value is read strictly by :mod:`regiment.hierarchy.plan._shape`. What
comes out is a :class:`~regiment.hierarchy.plan._lines._Reading`, as from the
line reader; :mod:`regiment.hierarchy.plan._parse` turns it into steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from regiment.hierarchy.plan._lines import _looks_like_json, _Reading
from regiment.hierarchy.plan._shape import _excerpt, _interpret

__all__ = ("_from_json",)

_FENCE = re.compile(r"```([^\n`]*)\n(.*?)(?:```|\Z)", re.S)
_TRAILING_COMMA = re.compile(r",(\s*[\]}])")
# A whole reply that is one JSON literal other than a string (a quoted line is prose).
_LITERAL = re.compile(r"null|true|false|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_MARKED_PREFIX = re.compile(r"^\s*(?:[-*•+]\s|(?:step\s*)?#?\d+\s*[.):])", re.I)
# Bounds that keep a pathological reply (thousands of brackets) cheap.
_MAX_RESCANS = 32
_SCAN_PASSES = 6
_MAX_DECODES = 64


class _Undecodable(msgspec.Struct, frozen=True):
    """A candidate that is not valid JSON, and why."""

    reason: str


def _from_json(reply: str) -> _Reading | None:
    """The plan in the reply's JSON, an error reading, or ``None`` to read lines instead."""
    fences = [(m.group(1).strip().lower(), m.group(2)) for m in _FENCE.finditer(reply)]
    json_fences = [body for tag, body in fences if tag.startswith("json") or _looks_like_json(body)]
    whole = reply.strip()
    if whole[:1] in ("{", "["):
        return _read_json_reply(whole, json_fences)
    if _LITERAL.fullmatch(whole):  # ``null``: no plan, nor a step named "null"
        literal = _decode(whole)  # (a number out of range is still a number)
        return _interpret(0 if isinstance(literal, _Undecodable) else literal, strict=True)
    if json_fences:
        return _read_fences(json_fences)
    return _read_prose(reply)


def _read_json_reply(whole: str, fences: list[str]) -> _Reading:
    """A reply that starts with a bracket: the value at its start is the plan, or the error."""
    value = _decode(whole)
    if isinstance(value, _Undecodable):
        end = _span_from(whole, 0)
        if end is not None:  # one JSON value, then prose ("Hope this helps")
            value = _decode(whole[:end])
    if isinstance(value, _Undecodable):
        reading = _Reading([], error=_not_json("the reply", whole, value.reason))
    else:
        found = _interpret(value, strict=True)
        assert found is not None  # strict reading never declines
        reading = found
    if reading.error is not None and fences:
        fenced = _read_fences(fences)
        return fenced if fenced.error is None else reading
    return reading


def _read_fences(bodies: list[str]) -> _Reading:
    """The first fenced JSON plan; else the first fence's error."""
    first: _Reading | None = None
    for body in bodies:
        value = _decode(body)
        if isinstance(value, _Undecodable):
            reading = _Reading([], error=_not_json("the ```json block", body, value.reason))
        else:
            found = _interpret(value, strict=True)
            assert found is not None
            reading = found
        if reading.error is None:
            return reading
        first = first or reading
    assert first is not None
    return first


def _read_prose(reply: str) -> _Reading | None:
    """The first plan-shaped value in prose; its error if it has one; ``None`` if there is none."""
    first_error: _Reading | None = None
    for value in _prose_values(reply):
        reading = _interpret(value, strict=False)
        if reading is None:
            continue
        if reading.error is None:
            return reading
        first_error = first_error or reading
    return first_error


def _not_json(what: str, text: str, reason: str) -> str:
    return (
        f"{what} starts like JSON but is not valid JSON ({reason}): {_excerpt(text)}; "
        'reply with one complete JSON object such as {"steps": [{"description": "..."}]}'
    )


def _prose_values(reply: str) -> Iterator[object]:
    decodes = 0
    for start, end in _bracket_spans(reply):
        line_start = reply.rfind("\n", 0, start) + 1
        if _MARKED_PREFIX.match(reply[line_start:start]):
            continue  # JSON inside a numbered/bulleted line is part of that step's text
        decodes += 1
        if decodes > _MAX_DECODES:
            return
        value = _decode(reply[start:end])
        if not isinstance(value, _Undecodable):
            yield value


def _decode(text: str) -> object:
    """The JSON value of ``text`` (a trailing comma forgiven), or why it is not JSON."""
    reason = ""
    for forgiving in (False, True):  # the trailing-comma fix only if the text needs it
        candidate = _TRAILING_COMMA.sub(r"\1", text) if forgiving else text
        try:
            value: object = msgspec.json.decode(candidate.strip())
        except msgspec.DecodeError as exc:
            reason = reason or str(exc)
            continue
        except RecursionError:
            return _Undecodable("it is nested too deeply")
        return value
    return _Undecodable(reason or "it is empty")


def _span_from(text: str, start: int) -> int | None:
    """The end of the balanced value that starts at ``start``, if it closes."""
    spans: set[tuple[int, int]] = set()
    _scan(text, start, spans, stop_at_depth_zero=True)
    return next((end for begin, end in spans if begin == start), None)


def _bracket_spans(text: str) -> list[tuple[int, int]]:
    """Start/end of every balanced ``[...]``/``{...}``, outer before inner."""
    spans: set[tuple[int, int]] = set()
    position: int | None = 0
    budget = _SCAN_PASSES * len(text)  # characters all rescans together may visit
    for _ in range(_MAX_RESCANS):
        if position is None or budget <= 0:
            break
        budget -= len(text) - position
        position = _scan(text, position, spans)
    return sorted(spans)


def _scan(
    text: str, position: int, spans: set[tuple[int, int]], *, stop_at_depth_zero: bool = False
) -> int | None:
    """One pass from ``position``; returns where to rescan from, or ``None`` when done.

    Quotes only open strings inside brackets: at depth 0 they are prose.
    """
    stack: list[int] = []
    in_string = escaped = False
    for i in range(position, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and stack:
            in_string = True
        elif char in "[{":
            stack.append(i)
        elif char in "]}" and stack:
            opener = stack.pop()
            if (text[opener], char) not in (("[", "]"), ("{", "}")):
                return (stack[0] if stack else opener) + 1
            spans.add((opener, i + 1))
            if stop_at_depth_zero and not stack:
                return None
    return stack[0] + 1 if stack else None
