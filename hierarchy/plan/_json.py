"""Reading a plan out of the JSON in a planner's reply (the first thing the parser tries).

The first balanced array or object that decodes *and* looks like a plan wins:
a code fence first, then anywhere in the prose. JSON inside a numbered or
bulleted line is that step's text, not a plan. What comes out is a
:class:`~regiment.hierarchy.plan._lines._Reading`, as from the line reader;
:mod:`regiment.hierarchy.plan._parse` turns it into steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from regiment.hierarchy.plan._lines import _RawStep, _Reading, _split_deps

__all__ = ("_from_json", "_numeric")

_TEXT_KEYS = ("description", "action", "task", "step", "title", "text", "instruction")
_WORKER_KEYS = ("worker", "assignee", "agent", "assigned_to")
_DEPS_KEYS = ("depends_on", "dependencies", "deps", "depends", "after")
_STEPS_KEYS = ("steps", "plan")
_NOTHING_FLAGS = ("nothing_to_do", "done", "no_steps")
_NUMERIC = re.compile(r"^(?:step[\s_-]*)?#?(\d+)$", re.I)

_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",(\s*[\]}])")
_MARKED_PREFIX = re.compile(r"^\s*(?:[-*•+]\s|(?:step\s*)?#?\d+\s*[.):])", re.I)
# Bounds that keep a pathological reply (thousands of brackets) cheap.
_MAX_RESCANS = 32
_MAX_DECODES = 64


def _numeric(label: str) -> int | None:
    match = _NUMERIC.match(label.strip())
    return int(match.group(1)) if match else None


def _from_json(reply: str) -> _Reading | None:
    """The first plan-shaped JSON value in the reply, or ``None`` if there is none."""
    whole = reply.strip()
    if whole[:1] in ("{", "[") and "```" not in reply:
        # A reply that is one JSON value (the usual case) is the first value the
        # scan below would find; decoding it directly skips a pass over every character.
        value = _decode(whole)
        reading = None if value is _FAILED else _interpret(value)
        if reading is not None:
            return reading
    for value in _json_values(reply):
        reading = _interpret(value)
        if reading is not None:
            return reading
    return None


def _json_values(reply: str) -> Iterator[object]:
    for fence in _FENCE.finditer(reply):
        value = _decode(fence.group(1))
        if value is not _FAILED:
            yield value
    decodes = 0
    for start, end in _bracket_spans(reply):
        line_start = reply.rfind("\n", 0, start) + 1
        if _MARKED_PREFIX.match(reply[line_start:start]):
            continue  # JSON inside a numbered/bulleted line is part of that step's text
        decodes += 1
        if decodes > _MAX_DECODES:
            return
        value = _decode(reply[start:end])
        if value is not _FAILED:
            yield value


_FAILED = object()


def _decode(text: str) -> object:
    for candidate in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            value: object = msgspec.json.decode(candidate.strip())
        except (msgspec.DecodeError, RecursionError):
            continue
        return value
    return _FAILED


def _bracket_spans(text: str) -> list[tuple[int, int]]:
    """Start/end of every balanced ``[...]``/``{...}``, outer before inner."""
    spans: set[tuple[int, int]] = set()
    position: int | None = 0
    for _ in range(_MAX_RESCANS):
        if position is None:
            break
        position = _scan(text, position, spans)
    return sorted(spans)


def _scan(text: str, position: int, spans: set[tuple[int, int]]) -> int | None:
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
    return stack[0] + 1 if stack else None


def _interpret(value: object) -> _Reading | None:
    """The steps if ``value`` is plan-shaped, else ``None``."""
    if isinstance(value, list):
        return _interpret_list(value)
    if isinstance(value, dict):
        steps = next((value[key] for key in _STEPS_KEYS if key in value), None)
        if isinstance(steps, list):
            return _interpret_list(steps)  # listed steps win over a contradicting flag
        if steps is None and any(value.get(flag) is True for flag in _NOTHING_FLAGS):
            return _Reading([], nothing_to_do=True)
    return None


def _interpret_list(items: list[object]) -> _Reading | None:
    if not items:
        return _Reading([], nothing_to_do=True)
    raws: list[_RawStep] = []
    for item in items:
        if isinstance(item, str):
            raws.append(_RawStep(description=item.strip()))
        elif isinstance(item, dict) and any(key in item for key in _TEXT_KEYS):
            raws.append(_raw_from_object(item))
        else:
            return None  # e.g. "[1]" as a citation in prose: not a plan
    return _Reading(raws)


def _raw_from_object(item: dict[str, object]) -> _RawStep:
    texts = (item.get(key) for key in _TEXT_KEYS)
    description = next((t.strip() for t in texts if isinstance(t, str) and t.strip()), "")
    return _RawStep(
        description=description,
        label=_label(item),
        worker=_first_string(item, _WORKER_KEYS),
        deps=_deps(next((item[key] for key in _DEPS_KEYS if key in item), None)),
        check=_first_string(item, ("check",)),
    )


def _label(item: dict[str, object]) -> str | None:
    """The model's own id for a step: ``id``, or a step number under ``step``/``number``."""
    for key in ("id", "step_id", "step", "number"):
        value = item.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return str(value)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            if key in ("id", "step_id") or _numeric(text) is not None:
                return text
    return None


def _first_string(item: dict[str, object], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _deps(value: object) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    deps: list[str] = []
    for item in values:
        if isinstance(item, str):
            deps.extend(_split_deps(item))
        elif isinstance(item, int) and not isinstance(item, bool):
            deps.append(str(item))
    return tuple(deps)
