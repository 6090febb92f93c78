"""What is wrong with a tool call's arguments, in the words the model reads.

A model writes JSON, so a problem quotes the values it sent as JSON (``null``,
``true``, ``"abc"``, ``{"a": 1}``), never as Python writes them (``None``,
``True``, ``'abc'``), and says what to send instead. Both validators speak through
here: pydantic's (a function's parameters) and jsonschema's (an MCP tool's input
schema), so the model reads one style whichever kind of tool it called.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from regiment._json import JsonObject
from regiment._text import json_shown
from regiment.tools._closed import fields_at, node_at

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaProblem

__all__ = (
    "location",
    "non_finite",
    "not_a_json_object",
    "pydantic_problem",
    "schema_problems",
)

_MAX_SHOWN = 80
_UNKNOWN_KEY = frozenset({"extra_forbidden", "unexpected_keyword_argument"})
_CHOICES = frozenset({"literal_error", "enum"})
_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


def location(loc: Iterable[object]) -> str:
    """``addr.lines[0]``: where in the arguments; ``arguments`` for the whole object."""
    where = ""
    for part in loc:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    return where or "arguments"


def not_a_json_object(arguments: object, schema: JsonObject) -> str:
    """Arguments that are not a JSON object at all (a list, a string, ``null``)."""
    names = fields_at(schema, ())
    wanted = f" with {', '.join(names)}" if names else ""
    return f"arguments must be a JSON object{wanted} (got {json_shown(arguments)})"


def non_finite(arguments: object) -> list[str]:
    """What is wrong with each number in ``arguments`` that is NaN or infinite (as a
    lenient JSON parser reads ``NaN`` and ``Infinity``); none: ``[]``."""
    found: list[str] = []
    _non_finite(arguments, (), found)
    return found


def _non_finite(value: object, at: tuple[object, ...], found: list[str]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        found.append(f"{location(at)}: Input should be a finite number (got {json_shown(value)})")
        return
    items: Iterable[tuple[object, object]] = ()
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    for key, item in items:
        _non_finite(item, (*at, key), found)


def pydantic_problem(error: Mapping[str, object], schema: JsonObject) -> str:
    """One of pydantic's validation errors, the values in it written as JSON."""
    loc = error.get("loc", ())
    assert isinstance(loc, tuple)
    where = location(loc)
    kind = error["type"]
    got = f" (got {json_shown(error.get('input'))})"
    if kind in _UNKNOWN_KEY:  # pydantic's words differ for a dataclass; say what to send
        return _no_such_field(loc, fields_at(schema, loc[:-1])) + got
    if kind == "missing":
        return _missing(where, node_at(schema, loc))
    if kind in _CHOICES and (node := node_at(schema, loc)) is not None:
        choices = _choices(node)
        if choices is not None:  # pydantic writes them as Python does: 'a' or None
            return f"{where}: Input should be {choices}{got}"
    return f"{where}: {error['msg']}{got}"


def schema_problems(errors: Sequence[SchemaProblem], most: int) -> list[str]:
    """jsonschema's errors (sorted by where), each once, at most ``most`` of them and
    a count of the rest; the values in them written as JSON."""
    found: list[str] = []
    for error in errors:
        for problem in _schema_problem(error):
            if problem not in found:  # "required" repeats itself once per missing name
                found.append(problem)
    if len(found) > most:
        return [*found[:most], f"... and {len(found) - most} more"]
    return found


def _schema_problem(error: SchemaProblem) -> list[str]:
    path = tuple(error.absolute_path)
    where = location(path)
    got = f" (got {json_shown(error.instance)})"
    rule, value, node = error.validator, error.validator_value, error.schema
    if rule == "type":
        types = value if isinstance(value, list) else [value]
        wanted = " or ".join(_WORDS.get(str(n), json_shown(n)) for n in types)
        return [f"{where}: Input should be {wanted}{got}"]
    if rule in ("enum", "const") and isinstance(node, dict):
        return [f"{where}: Input should be {_choices(node)}{got}"]
    if rule == "required" and isinstance(error.instance, dict) and isinstance(value, list):
        kinds = node.get("properties", {}) if isinstance(node, dict) else {}
        missing = [n for n in value if isinstance(n, str) and n not in error.instance]
        return [_missing(location((*path, n)), kinds.get(n)) for n in missing]
    if rule == "additionalProperties" and value is False and isinstance(error.instance, dict):
        assert isinstance(node, dict)
        names = [str(n) for n in node.get("properties", {})]
        extra = [k for k in error.instance if k not in names and not _patterned(node, k)]
        return [
            f"{_no_such_field((*path, key), names)} (got {json_shown(error.instance[key])})"
            for key in extra
        ]
    return [f"{where}: Input should meet the schema's {json_shown(rule)}: {json_shown(value)}{got}"]


def _patterned(node: Mapping[str, object], key: str) -> bool:
    patterns = node.get("patternProperties")
    return isinstance(patterns, dict) and any(re.search(p, key) for p in patterns)


def _no_such_field(loc: tuple[object, ...], names: list[str] | None) -> str:
    text = f"{location(loc)}: no such field"
    if names is not None:  # no "; ": it separates the problems
        owner = f"{location(loc[:-1])} has" if len(loc) > 1 else "the arguments have"
        text += f", {owner} only {', '.join(names) or 'no fields'}"
    return text


def _missing(where: str, node: object) -> str:
    wanted = _wanted(node) if isinstance(node, dict) else None
    return f"{where}: Field required" + (f", send {wanted}" if wanted else "")


def _wanted(node: Mapping[str, object]) -> str | None:
    """What a schema node asks for, in a few words: ``an integer``, ``"a" or "b"``."""
    choices = _choices(node)
    if choices is not None:
        return choices
    kind = node.get("type")
    names = kind if isinstance(kind, list) else [kind]
    words = [_WORDS[n] for n in names if isinstance(n, str) and n in _WORDS]
    return " or ".join(words) or None


def _choices(node: Mapping[str, object]) -> str | None:
    if "const" in node:
        return json_shown(node["const"])
    values = node.get("enum")
    if not isinstance(values, list) or not values:
        return None
    shown = [json_shown(v) for v in values]
    text = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    return text if len(text) <= 2 * _MAX_SHOWN else text[: 2 * _MAX_SHOWN - 3] + "..."
