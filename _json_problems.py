"""What is wrong with JSON a model sent (a tool call's arguments) or a tool returned,
in the words a model reads: the values quoted as JSON (``null``, ``true``, ``"abc"``,
``{"a": 1}``), never as Python writes them, and what to send instead.

jsonschema's errors are worded here (an MCP tool's input schema, the JSON-schema
guardrail); pydantic's are worded in ``regiment.tools._argument_words`` with these parts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from regiment._text import json_shown

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaProblem

__all__ = (
    "choices",
    "either",
    "form_words",
    "location",
    "missing",
    "no_such_field",
    "non_finite",
    "schema_problems",
    "wanted",
)

_MAX_SHOWN = 80
_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


def location(loc: Iterable[object], whole: str = "arguments") -> str:
    """``addr.lines[0]``: where in the arguments; ``whole`` for the whole of them."""
    where = ""
    for part in loc:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    return where or whole


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


def schema_problems(
    errors: Sequence[SchemaProblem], most: int, whole: str = "arguments"
) -> list[str]:
    """jsonschema's errors (sorted by where), each once, at most ``most`` of them and
    a count of the rest; the values in them written as JSON. ``whole``: what the
    checked value is called (``the result``: a tool's)."""
    found: list[str] = []
    for error in errors:
        for problem in _schema_problem(error, whole):
            if problem not in found:  # "required" repeats itself once per missing name
                found.append(problem)
    if len(found) > most:
        return [*found[:most], f"... and {len(found) - most} more"]
    return found


def _schema_problem(error: SchemaProblem, whole: str) -> list[str]:
    path = tuple(error.absolute_path)
    where = location(path, whole)
    got = f" (got {json_shown(error.instance)})"
    rule, value, node = error.validator, error.validator_value, error.schema
    if rule == "type":
        types = value if isinstance(value, list) else [value]
        wanted = " or ".join(_WORDS.get(str(n), json_shown(n)) for n in types)
        return [f"{where}: Input should be {wanted}{got}"]
    if rule in ("enum", "const") and isinstance(node, dict):
        return [f"{where}: Input should be {choices(node)}{got}"]
    if rule == "required" and isinstance(error.instance, dict) and isinstance(value, list):
        kinds = node.get("properties", {}) if isinstance(node, dict) else {}
        absent = [n for n in value if isinstance(n, str) and n not in error.instance]
        return [missing(location((*path, n)), kinds.get(n)) for n in absent]
    if rule == "additionalProperties" and value is False and isinstance(error.instance, dict):
        assert isinstance(node, dict)
        names = [str(n) for n in node.get("properties", {})]
        extra = [k for k in error.instance if k not in names and not _patterned(node, k)]
        return [
            f"{no_such_field((*path, key), names, whole)} (got {json_shown(error.instance[key])})"
            for key in extra
        ]
    if rule in ("anyOf", "oneOf") and isinstance(value, list) and error.context:
        return _no_form(error, value, whole)
    return [f"{where}: Input should meet the schema's {json_shown(rule)}: {json_shown(value)}{got}"]


_OTHER_TYPE = frozenset({"type", "enum", "const"})


def _no_form(error: SchemaProblem, forms: list[object], whole: str) -> list[str]:
    """A value no form of an ``anyOf`` (or ``oneOf``) took: of another JSON type than
    every form, the forms; else what is wrong with it in the forms of its type."""
    tried: dict[int, list[SchemaProblem]] = {}
    for sub in error.context or ():
        index = sub.relative_schema_path[0] if sub.relative_schema_path else None
        if isinstance(index, int):
            tried.setdefault(index, []).append(sub)
    near = [
        i
        for i, subs in tried.items()
        if not all(not s.relative_path and s.validator in _OTHER_TYPE for s in subs)
    ]
    where = location(tuple(error.absolute_path), whole)
    words = [form_words(f) if isinstance(f, dict) else json_shown(f) for f in forms]
    if not near:
        return [f"{where}: Input should be {either(words)} (got {json_shown(error.instance)})"]
    out: list[str] = []
    for index in near:
        given = "" if len(near) == 1 else f" (for {where} as {words[index]})"
        for sub in tried[index]:
            out.extend(problem + given for problem in _schema_problem(sub, whole))
    return out


def _patterned(node: Mapping[str, object], key: str) -> bool:
    patterns = node.get("patternProperties")
    return isinstance(patterns, dict) and any(re.search(p, key) for p in patterns)


def no_such_field(
    loc: tuple[object, ...], names: list[str] | None, whole: str = "arguments"
) -> str:
    text = f"{location(loc)}: no such field"
    if names is not None:  # no "; ": it separates the problems
        owner = (
            f"{location(loc[:-1])} has"
            if len(loc) > 1
            else f"the {whole} {'have' if whole == 'arguments' else 'has'}"
        )
        text += f", {owner} only {', '.join(names) or 'no fields'}"
    return text


def missing(where: str, node: object) -> str:
    asked = wanted(node) if isinstance(node, dict) else None
    return f"{where}: Field required" + (f", send {asked}" if asked else "")


def either(words: Sequence[str]) -> str:
    """``an integer, a string or null``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def wanted(node: Mapping[str, object]) -> str | None:
    """What a schema node asks for, in a few words: ``an integer``, ``"a" or "b"``."""
    listed = choices(node)
    if listed is not None:
        return listed
    kind = node.get("type")
    names = kind if isinstance(kind, list) else [kind]
    words = [_WORDS[n] for n in names if isinstance(n, str) and n in _WORDS]
    return " or ".join(words) or None


def form_words(
    node: Mapping[str, object],
    resolve: Callable[[Mapping[str, object]], Mapping[str, object] | None] = lambda n: n,
) -> str:
    """One form of a union in a few words: ``an integer``, ``"a" or "b"``, ``an object
    with city, zip``, ``a date string``; ``resolve`` follows a ``$ref``."""
    node = resolve(node) or {}
    properties = node.get("properties")
    if node.get("type") == "object" and isinstance(properties, dict) and properties:
        return f"an object with {', '.join(properties)}"
    if node.get("type") == "string" and isinstance(node.get("format"), str):
        return f"a {node['format']} string"
    inner = node.get("anyOf", node.get("oneOf"))
    if isinstance(inner, list):
        return either([form_words(o, resolve) for o in inner if isinstance(o, dict)])
    return wanted(node) or "a value of another form"


def choices(node: Mapping[str, object]) -> str | None:
    if "const" in node:
        return json_shown(node["const"])
    values = node.get("enum")
    if not isinstance(values, list) or not values:
        return None
    text = either([json_shown(v) for v in values])
    return text if len(text) <= 2 * _MAX_SHOWN else text[: 2 * _MAX_SHOWN - 3] + "..."
