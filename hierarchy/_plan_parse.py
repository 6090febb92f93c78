"""Lenient parsing of a planner model's reply into plan steps.

Models wrap plans in many ways, so the parser looks, in order, for:

1. JSON: in a code fence or anywhere in the prose (the first balanced array or
   object that decodes *and* looks like a plan): a list of strings, a list of
   step objects, or an object with ``steps`` (optionally a ``nothing_to_do`` /
   ``done`` flag).
2. Marked lines: numbered (``1.``, ``1)``, ``Step 1:``) or bulleted (``-``,
   ``*``, ``•``) lines are the steps, so lead-in and closing prose is not.
3. Otherwise every non-blank line is a step.

Line-based reading (2 and 3) lives in :mod:`regiment.hierarchy._plan_lines`.

It never raises on what a model wrote: the worst outcome is a
:class:`ParsedPlan` with no steps, which the planner answers with a re-prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import msgspec

from regiment.errors import ConfigError
from regiment.hierarchy._plan import PlanStep
from regiment.hierarchy._plan_lines import (
    _NOTHING_FULL,
    _from_lines,
    _RawStep,
    _Reading,
    _split_deps,
)

__all__ = ("ParsedPlan", "parse_plan")

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


class ParsedPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`parse_plan` understood from a reply.

    Attributes:
        steps: the steps, blank ones dropped, at most ``max_steps``.
        truncated_from: the step count before truncation, if the reply had too many.
        nothing_to_do: the reply said no steps are needed (``steps`` is empty).
        source: where the steps came from: ``json``, ``lines``, or ``empty``
            (the reply was blank).
    """

    steps: tuple[PlanStep, ...]
    truncated_from: int | None = None
    nothing_to_do: bool = False
    source: Literal["json", "lines", "empty"] = "lines"


def parse_plan(
    reply: str, *, max_steps: int, id_prefix: str = "s", start_index: int = 1
) -> ParsedPlan:
    """Parse a planner model's reply into steps, leniently.

    Ids: explicit string ids from the model are kept (trimmed; duplicates get
    ``-2``, ``-3`` suffixes). Steps without one, or with a numeric id such as
    ``1`` or ``"step 2"``, are numbered ``{id_prefix}{start_index}``,
    ``{id_prefix}{start_index + 1}``, ... by position, skipping ids already
    taken; a replan passes ``start_index`` past the kept steps so ids never
    collide with them.

    Dependencies: a string naming an explicit id means that step; a number
    ``N`` (or ``"N"``, ``"step N"``) means the step the model labelled ``N``,
    or, when it labelled none, the Nth step of the reply; other numbers become
    ``{id_prefix}N`` and other strings are kept as given (a kept step's id, or
    a mistake that validation reports). Dependencies on blank steps are dropped.

    Args:
        reply: the model's text.
        max_steps: keep at most this many steps; more are cut and the original
            count is recorded in ``truncated_from``.
        id_prefix: prefix of generated ids.
        start_index: number of the first generated id.

    Raises:
        ConfigError: ``max_steps`` < 1 or ``start_index`` < 0.
    """
    if max_steps < 1 or start_index < 0:
        raise ConfigError(
            f"parse_plan needs max_steps >= 1 and start_index >= 0, got "
            f"max_steps={max_steps}, start_index={start_index}"
        )
    if not reply.strip():
        return ParsedPlan(steps=(), source="empty")
    reading = _from_json(reply)
    if reading is not None:
        return _finish(reading, "json", max_steps, id_prefix, start_index)
    return _finish(_from_lines(reply), "lines", max_steps, id_prefix, start_index)


def _finish(
    reading: _Reading, source: Literal["json", "lines"], max_steps: int, prefix: str, start: int
) -> ParsedPlan:
    raws = reading.raws
    kept = [i for i, raw in enumerate(raws) if raw.description]
    lone = len(kept) == 1 and _NOTHING_FULL.match(raws[kept[0]].description)
    if reading.nothing_to_do or lone:
        return ParsedPlan(steps=(), nothing_to_do=True, source=source)
    ids = _assign_ids(raws, kept, prefix, start)
    resolve = _DepResolver(raws, ids, prefix)
    steps = [
        PlanStep(
            id=ids[i],
            description=raws[i].description,
            worker=raws[i].worker,
            depends_on=resolve(raws[i].deps),
            check=raws[i].check,
        )
        for i in kept
    ]
    truncated_from = len(steps) if len(steps) > max_steps else None
    return ParsedPlan(steps=tuple(steps[:max_steps]), truncated_from=truncated_from, source=source)


def _numeric(label: str) -> int | None:
    match = _NUMERIC.match(label.strip())
    return int(match.group(1)) if match else None


def _assign_ids(raws: list[_RawStep], kept: list[int], prefix: str, start: int) -> dict[int, str]:
    ids: dict[int, str] = {}
    taken: set[str] = set()
    # Explicit ids first, so a generated id never takes a name the model chose.
    for i in kept:
        label = raws[i].label
        if label and _numeric(label) is None:
            ids[i] = _unique(label, taken)
    for position, i in enumerate(kept):
        if i not in ids:
            number = start + position
            while f"{prefix}{number}" in taken:
                number += 1
            ids[i] = f"{prefix}{number}"
            taken.add(ids[i])
    return ids


def _unique(base: str, taken: set[str]) -> str:
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    taken.add(candidate)
    return candidate


class _DepResolver:
    """Turns the dependencies a model wrote into step ids."""

    def __init__(self, raws: list[_RawStep], ids: dict[int, str], prefix: str) -> None:
        self._ids, self._prefix, self._count = ids, prefix, len(raws)
        self._explicit: dict[str, int] = {}
        self._numbered: dict[int, int] = {}
        for i, raw in enumerate(raws):
            number = _numeric(raw.label) if raw.label else None
            if raw.label and number is None:
                self._explicit.setdefault(raw.label, i)
            elif number is not None:
                self._numbered.setdefault(number, i)

    def __call__(self, deps: tuple[str, ...]) -> tuple[str, ...]:
        resolved: list[str] = []
        for dep in deps:
            name = self._name(dep)
            if name is not None and name not in resolved:
                resolved.append(name)
        return tuple(resolved)

    def _name(self, dep: str) -> str | None:
        """The id ``dep`` means, or ``None`` when it points at a dropped blank step."""
        target: int | None = self._explicit.get(dep)
        number = _numeric(dep)
        if target is None and number is not None:
            if self._numbered:
                target = self._numbered.get(number)
            elif 1 <= number <= self._count:
                target = number - 1
        if target is not None:
            return self._ids.get(target)
        return dep if number is None else f"{self._prefix}{number}"


# --- JSON -------------------------------------------------------------------


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
