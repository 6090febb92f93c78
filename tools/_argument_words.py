"""What is wrong with a tool call's arguments, in the words the model reads.

A model writes JSON, so a problem quotes the values it sent as JSON (``null``,
``true``, ``"abc"``, ``{"a": 1}``), never as Python writes them (``None``,
``True``, ``'abc'``), and says what to send instead. Both validators speak so:
pydantic's (a function's parameters, worded here) and jsonschema's (an MCP tool's
input schema, worded in ``regiment._json_problems``), so the model reads one style
whichever kind of tool it called.
"""

from __future__ import annotations

from collections.abc import Mapping

from regiment._json import JsonObject
from regiment._json_problems import choices, location, missing, no_such_field
from regiment._text import json_shown
from regiment.tools._closed import fields_at, node_at

__all__ = ("not_a_json_object", "pydantic_problem")

_UNKNOWN_KEY = frozenset({"extra_forbidden", "unexpected_keyword_argument"})
_CHOICES = frozenset({"literal_error", "enum"})


def not_a_json_object(arguments: object, schema: JsonObject) -> str:
    """Arguments that are not a JSON object at all (a list, a string, ``null``)."""
    names = fields_at(schema, ())
    wanted = f" with {', '.join(names)}" if names else ""
    return f"arguments must be a JSON object{wanted} (got {json_shown(arguments)})"


def pydantic_problem(error: Mapping[str, object], schema: JsonObject) -> str:
    """One of pydantic's validation errors, the values in it written as JSON."""
    loc = error.get("loc", ())
    assert isinstance(loc, tuple)
    where = location(loc)
    kind = error["type"]
    got = f" (got {json_shown(error.get('input'))})"
    if kind in _UNKNOWN_KEY:  # pydantic's words differ for a dataclass; say what to send
        return no_such_field(loc, fields_at(schema, loc[:-1])) + got
    if kind == "missing":
        return missing(where, node_at(schema, loc))
    if kind in _CHOICES and (node := node_at(schema, loc)) is not None:
        listed = choices(node)
        if listed is not None:  # pydantic writes them as Python does: 'a' or None
            return f"{where}: Input should be {listed}{got}"
    return f"{where}: {error['msg']}{got}"
