"""Reading a decoded JSON value as a plan, strictly: the value is a plan, or an error.

A plan is a list of steps, or an object whose ``steps`` (or ``plan``) is
such a list, possibly nested one or two objects deep; ``[]``, ``{"steps": []}``
or a ``nothing_to_do`` / ``done`` flag says nothing needs doing. A step is a
non-blank string, or an object with a non-blank string description (under
``description``, ``action``, ``task``, ...), a string worker, a string check,
and dependencies given as step ids or numbers.

A step that breaks these rules is never dropped or guessed at: the reading is
an error that names the step and says what to write instead, so the planner
model gets it back as a re-prompt.
"""

from __future__ import annotations

import re

import msgspec

from regiment.hierarchy.plan._lines import (
    _looks_like_json,
    _meaningful,
    _RawStep,
    _Reading,
    _split_deps,
)

__all__ = ("_excerpt", "_interpret", "_kind", "_numeric")

_TEXT_KEYS = ("description", "action", "task", "step", "title", "text", "instruction")
_WORKER_KEYS = ("worker", "assignee", "agent", "assigned_to")
_DEPS_KEYS = ("depends_on", "dependencies", "deps", "depends", "after")
_STEPS_KEYS = ("steps", "plan")
_NOTHING_FLAGS = ("nothing_to_do", "done", "no_steps")
_NUMERIC = re.compile(r"^(?:step[\s_-]*)?#?(\d{1,9})$", re.I)
_NUMBER_START = re.compile(r"step|#|\d", re.I)  # how whatever _NUMERIC matches starts
# What a model's own id must look like to be the step's id (``s1``, ``check_eligibility``,
# ``fetch-2``): anything else (a phrase, an address, a number) is only a label its
# dependencies may name, and the step gets a generated id. The id goes where the
# model's words may not: span attributes with content capture off, logs, the CLI.
_ID_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,39}")
# How deep under other objects a ``steps`` list is still looked for.
_NESTING = 3
# Problems listed in one error; a reply with more gets the first ones.
_MAX_PROBLEMS = 5


def _numeric(label: str) -> int | None:
    """The number ``label`` means ("3", "#3", "step 3"), or ``None`` for a name."""
    text = label.strip()
    if _NUMBER_START.match(text) is None:  # most labels ("s1", "fetch") fail here
        return None
    match = _NUMERIC.match(text)
    return int(match.group(1)) if match else None


def _kind(value: object) -> str:
    """The JSON name of ``value``'s type, for messages."""
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int() | float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "object"
    return type(value).__name__


def _a(value: object) -> str:
    """``value``'s JSON type with its article: "a string", "an array"."""
    kind = _kind(value)
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _excerpt(text: str, limit: int = 80) -> str:
    """A short, quoted piece of ``text`` for an error message."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def _interpret(value: object, *, strict: bool) -> _Reading | None:
    """The plan in ``value``, or an error reading.

    With ``strict=False`` (JSON found in prose) a value that is not plan-shaped
    at all (a citation like ``[1]``, a config snippet) gives ``None``, so the
    caller can look further; a plan-shaped value with bad steps is still an error.
    """
    if isinstance(value, dict):
        holder = _steps_holder(value)
        if holder is not None:
            steps = next(holder[key] for key in _STEPS_KEYS if key in holder)
            if not isinstance(steps, list):
                return _error(
                    f'"steps" must be an array of steps, but it is {_a(steps)}: '
                    f"{_excerpt(steps if isinstance(steps, str) else _as_json(steps))}"
                )
            return _interpret_list(steps)  # listed steps win over a contradicting flag
        if any(value.get(flag) is True for flag in _NOTHING_FLAGS):
            return _Reading([], nothing_to_do=True)
        if not strict:
            return None
        keys = ", ".join(sorted(value)[:8]) or "none"
        return _error(f'the JSON object has no "steps" array (its keys: {keys})')
    if isinstance(value, list):
        if not strict and value and not all(_step_shaped(item) for item in value):
            return None
        return _interpret_list(value)
    if not strict:
        return None
    return _error(f"the JSON is {_a(value)}, not a plan")


def _steps_holder(value: dict[str, object]) -> dict[str, object] | None:
    """``value`` or the object nested in it that holds the steps (breadth first, bounded)."""
    level = [value]
    for _ in range(_NESTING):
        for candidate in level:
            if any(key in candidate for key in _STEPS_KEYS):
                return candidate
        level = [v for c in level for v in c.values() if isinstance(v, dict)]
    return None


def _step_shaped(item: object) -> bool:
    return isinstance(item, str) or (
        isinstance(item, dict) and any(key in item for key in _TEXT_KEYS)
    )


def _as_json(value: object) -> str:
    """``value`` (decoded JSON) written as JSON again: ``null``, not Python's ``None``."""
    return msgspec.json.encode(value).decode()


def _error(problem: str) -> _Reading:
    return _Reading(
        [],
        error=f"{problem}; reply with the plan as JSON: "
        '{"steps": [{"description": "...", "worker": "...", "depends_on": []}]}',
    )


def _interpret_list(items: list[object]) -> _Reading:
    if not items:
        return _Reading([], nothing_to_do=True)
    raws: list[_RawStep] = []
    problems: list[str] = []
    for number, item in enumerate(items, start=1):
        raw = _usual_step(item) or _step(item, number, problems)
        if raw is not None:
            raws.append(raw)
    if problems:
        more = len(problems) - _MAX_PROBLEMS
        listed = "; ".join(problems[:_MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
        return _error(f"the plan's steps are malformed: {listed}")
    return _Reading(raws)


_USUAL_KEYS = frozenset(("id", "description", "worker", "depends_on", "check"))


def _usual_step(item: object) -> _RawStep | None:
    """The step object planners usually write, read in one pass: what ``_step``
    reads from it, or ``None`` to let ``_step`` apply (and explain) the rules."""
    if type(item) is not dict or not _USUAL_KEYS.issuperset(item):
        return None
    text, label, worker = item.get("description"), item.get("id"), item.get("worker")
    deps, check = item.get("depends_on", ()), item.get("check")
    if type(text) is not str or not _meaningful(text) or type(deps) is not list:
        return None
    if label is not None and (type(label) is not str or not label.strip()):
        return None
    for dep in deps:  # a loop, not all(<genexpr>): this runs for every step of every plan
        if type(dep) is not str or not dep.isalnum() or dep.lower() == "and":
            return None  # separators, numbers or other shapes: the general rules
    if not (worker is None or type(worker) is str) or not (check is None or type(check) is str):
        return None
    return _RawStep(
        description=text.strip(),
        label=label and label.strip(),
        worker=(worker and worker.strip()) or None,
        deps=tuple(deps),
        check=(check and check.strip()) or None,
    )


def _step(item: object, number: int, problems: list[str]) -> _RawStep | None:
    if isinstance(item, str):
        if _looks_like_json(item):
            problems.append(_json_text(number, item))
            return None
        # A blank step is read as "" and dropped with the other blank ones (issue #5)
        return _RawStep(description=item.strip() if _meaningful(item) else "")
    if not isinstance(item, dict):
        problems.append(
            f"step {number} is {_a(item)}; write each step as a string or as an "
            'object with a "description"'
        )
        return None
    if _blank(item):  # its text says nothing: dropped, its id kept for a dependency on it
        return _RawStep(description="", label=_label(item, number, []))
    before = len(problems)
    description = _description(item, number, problems)
    label = _label(item, number, problems)
    worker = _optional_text(item, _WORKER_KEYS, number, problems)
    deps = _deps(item, number, problems)
    check = _optional_text(item, ("check",), number, problems)
    if description is None or len(problems) > before:
        return None
    return _RawStep(description=description, label=label, worker=worker, deps=deps, check=check)


def _description(item: dict[str, object], number: int, problems: list[str]) -> str | None:
    present = [(key, item[key]) for key in _TEXT_KEYS if key in item]
    for _, text in present:
        if isinstance(text, str) and _looks_like_json(text):
            problems.append(_json_text(number, text))
            return None
        if isinstance(text, str) and _meaningful(text):
            return text.strip()
    # "step": 3 is the step's number, not its text
    wrong = [(k, v) for k, v in present if not (k == "step" and _is_small_int(v))]
    if not wrong:
        problems.append(f'step {number} has no "description"; say what the step must do')
    else:
        key, text = wrong[0]
        shown = "a blank string" if isinstance(text, str) else _a(text)
        problems.append(
            f'step {number}\'s "{key}" is {shown}; it must be text saying what the step must do'
        )
    return None


def _blank(item: dict[str, object]) -> bool:
    """Whether a step object's text is given, as strings that say nothing (``""``, ``"  "``,
    ``"-"``): a blank step. No text at all, or text of another type, is a mistake instead."""
    texts = [
        item[key]
        for key in _TEXT_KEYS
        if key in item and not (key == "step" and _is_small_int(item[key]))
    ]
    return bool(texts) and all(isinstance(t, str) and not _meaningful(t) for t in texts)


def _json_text(number: int, text: str) -> str:
    """Text that reads as JSON is never a step's: a step written as JSON inside a string,
    or cut short, would run as its raw text."""
    return (
        f"step {number}'s text is JSON, not words ({_excerpt(text)}); write each step as an "
        'object with a "description" saying in words what the step must do'
    )


def _is_small_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9


def _label(item: dict[str, object], number: int, problems: list[str]) -> str | None:
    """The model's own id for a step: ``id``, or a step number under ``step``/``number``."""
    for key in ("id", "step_id", "step", "number"):
        value = item.get(key)
        if _is_small_int(value):
            return str(value)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            if key in ("id", "step_id") or _numeric(text) is not None:
                return text
        elif key in ("id", "step_id") and not (value is None or isinstance(value, str)):
            # a blank string is no id, as a missing one: the step gets the next free sN
            problems.append(
                f'step {number}\'s "{key}" is {_a(value)}; use a short string such as "s1"'
            )
    return None


def _optional_text(
    item: dict[str, object], keys: tuple[str, ...], number: int, problems: list[str]
) -> str | None:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if value is not None and not isinstance(value, str):
            problems.append(
                f'step {number}\'s "{key}" is {_a(value)}; it must be a name (a string)'
            )
            return None
    return None


def _deps(item: dict[str, object], number: int, problems: list[str]) -> tuple[str, ...]:
    value = next((item[key] for key in _DEPS_KEYS if key in item), None)
    values = value if isinstance(value, list) else [] if value is None else [value]
    deps: list[str] = []
    for dep in values:
        if isinstance(dep, str):
            deps.extend(_split_deps(dep))
        elif _is_small_int(dep):
            deps.append(str(dep))
        else:
            problems.append(
                f"step {number} depends on {_a(dep)}; list the ids (or numbers) "
                "of the steps it needs"
            )
            break
    return tuple(deps)
