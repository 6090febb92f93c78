"""What is wrong with a tool call's arguments, in the words the model reads.

A model writes JSON, so a problem quotes the values it sent as JSON (``null``,
``true``, ``"abc"``, ``{"a": 1}``), never as Python writes them (``None``,
``True``, ``'abc'``), and says what to send instead. Both validators speak so:
pydantic's (a function's parameters, worded here) and jsonschema's (an MCP tool's
input schema, worded in ``regiment._json_problems``), so the model reads one style
whichever kind of tool it called. A union's forms, which pydantic names by their
Python types in an error's location (``a.int``), are worded as the JSON they take
(``a: Input should be an integer or a string``): see ``regiment.tools._union_words``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from regiment._json import JsonObject
from regiment._json_problems import (
    choices,
    either,
    form_words,
    location,
    missing,
    no_such_field,
)
from regiment._text import json_shown
from regiment.tools._closed import fields_at
from regiment.tools._union_words import Form, Walked, single, walk

__all__ = ("not_a_json_object", "pydantic_problems")

_UNKNOWN_KEY = frozenset({"extra_forbidden", "unexpected_keyword_argument"})
_CHOICES = frozenset({"literal_error", "enum"})
_TAGS = frozenset({"union_tag_invalid", "union_tag_not_found"})
# A value of another JSON type than a union's form takes (or not one of its choices).
_NOT_THIS_FORM = frozenset(
    {
        *_CHOICES,
        "bool_type",
        "bytes_type",
        "dataclass_type",
        "date_type",
        "datetime_type",
        "decimal_type",
        "dict_type",
        "float_type",
        "frozen_set_type",
        "int_type",
        "is_instance_of",
        "list_type",
        "model_attributes_type",
        "model_type",
        "none_required",
        "set_type",
        "string_type",
        "time_type",
        "timedelta_type",
        "tuple_type",
        "url_type",
        "uuid_type",
    }
)


def not_a_json_object(arguments: object, schema: JsonObject) -> str:
    """Arguments that are not a JSON object at all (a list, a string, ``null``)."""
    names = fields_at(schema, ())
    wanted = f" with {', '.join(names)}" if names else ""
    return f"arguments must be a JSON object{wanted} (got {json_shown(arguments)})"


def pydantic_problems(errors: Sequence[Mapping[str, object]], schema: JsonObject) -> list[str]:
    """pydantic's validation errors, the values in them written as JSON, each once."""
    seen: dict[object, list[object]] = {}
    found: list[str] = []
    for problem in _worded([walk(error, schema, seen) for error in errors], 0, schema):
        if problem not in found:
            found.append(problem)
    return found


def _worded(items: list[Walked], depth: int, schema: JsonObject) -> list[str]:
    """The problems of ``items``, those inside a union (past its first ``depth``
    ones) worded by the union, together."""
    order: list[Walked | tuple[object, ...]] = []
    unions: dict[tuple[object, ...], tuple[Form, dict[int, list[Walked]]]] = {}
    for item in items:
        if len(item.forms) <= depth:
            order.append(item)
            continue
        form = item.forms[depth]
        if form.at not in unions:
            unions[form.at] = (form, {})
            order.append(form.at)
        unions[form.at][1].setdefault(form.index, []).append(item)
    out: list[str] = []
    for entry in order:
        if isinstance(entry, Walked):
            out.append(_one(entry))
        else:
            out.extend(_union(*unions[entry], depth, schema))
    return out


def _union(form: Form, tried: dict[int, list[Walked]], depth: int, schema: JsonObject) -> list[str]:
    """A value no form of a union took. Of another JSON type than every form: what it
    should be; else what is wrong with it in the forms of its type (for each, the
    form said, when several)."""
    near = [i for i, its in tried.items() if not all(_other_type(w, form, depth) for w in its)]
    if not near:
        words = [_form_words(option, schema) for option in form.options]
        sent = tried[min(tried)][0].error.get("input")
        shown = either([*words, "null"] if form.nullable else words)
        return [f"{location(form.at)}: Input should be {shown} (got {json_shown(sent)})"]
    if len(near) == 1:
        return _worded(tried[near[0]], depth + 1, schema)
    out: list[str] = []
    for index in near:
        given = f" (for {location(form.at)} as {_form_words(form.options[index], schema)})"
        out.extend(problem + given for problem in _worded(tried[index], depth + 1, schema))
    return out


def _other_type(item: Walked, form: Form, depth: int) -> bool:
    return (
        len(item.forms) == depth + 1
        and item.loc == form.at
        and item.error.get("type") in _NOT_THIS_FORM
    )


def _form_words(option: Mapping[str, object], schema: JsonObject) -> str:
    """A union's form in a few words (``$ref`` followed)."""
    return form_words(option, lambda node: single(schema, node)[0])


def _one(item: Walked) -> str:
    """One of pydantic's errors outside a union, or inside one of its forms."""
    error, loc, node = item.error, item.loc, item.node
    where = location(loc)
    kind = error["type"]
    got = f" (got {json_shown(error.get('input'))})"
    if kind in _UNKNOWN_KEY:  # pydantic's words differ for a dataclass; say what to send
        properties = None if item.parent is None else item.parent.get("properties")
        names = list(properties) if isinstance(properties, dict) else None
        return no_such_field(loc, names) + got
    if kind == "missing":
        return missing(where, node)
    if kind in _TAGS and node is not None and (tagged := _tag(item, node)) is not None:
        return tagged
    if kind in _CHOICES and node is not None:
        listed = choices(node)
        if listed is not None:  # pydantic writes them as Python does: 'a' or None
            return f"{where}: Input should be {listed}{' or null' if item.nullable else ''}{got}"
    return f"{where}: {error['msg']}{got}"


def _tag(item: Walked, node: Mapping[str, object]) -> str | None:
    """A tagged union's tag missing, or not one of its tags, as the field it is."""
    found = node.get("discriminator")
    name = found.get("propertyName") if isinstance(found, dict) else None
    mapping = found.get("mapping") if isinstance(found, dict) else None
    if not isinstance(name, str) or not isinstance(mapping, dict):
        return None
    where = location((*item.loc, name))
    tags = either([json_shown(tag) for tag in mapping])
    sent = item.error.get("input")
    if item.error["type"] == "union_tag_not_found" or not isinstance(sent, dict):
        return f"{where}: Field required, send {tags}"
    return f"{where}: Input should be {tags} (got {json_shown(sent.get(name))})"
