"""msgspec's decoding errors in a team file's own words.

msgspec says ``Object missing required field `predicate` - at `$.checks[...]```;
a user needs the key path as they wrote it (``checks.c.predicate``) and, for a
misspelt key or table, the fix in the syntax of their file: ``[[workers]]`` for
a TOML array of tables, ``[planner]`` for a table, ``max_steps =`` for a key,
``max_steps:`` in YAML.
"""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from dataclasses import dataclass

import msgspec

from regiment.config._text import ConfigFormat, key_text
from regiment.errors import ConfigError
from regiment.hierarchy import InvalidValue
from regiment.models import ModelSettings

__all__ = ("explain", "settings_error")

_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_KEY_AT = re.compile(r"^(?P<what>.*?) - at `key` in `\$(?P<path>[^`]*)`$", re.S)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>.*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<key>.*)`$", re.S)
_SEGMENT = re.compile(r"\.(?P<field>[^.\[]+)|\[(?P<index>\d+|\.\.\.)\]")


@dataclass(frozen=True)
class _Spot:
    """Where a path leads: its text, the header a TOML table there has, the data and its type."""

    path: str
    header: str
    value: object
    type: object
    key: str = ""  # the key the path ends in ("" for an array item or the whole file)


def explain(
    message: str, raw: object, root: type, fmt: ConfigFormat, *, cause: BaseException | None = None
) -> str:
    """``key.path: what went wrong``, from msgspec's message about decoding ``raw`` as ``root``.

    ``cause`` is what msgspec wrapped, if anything: a type that checks its own
    ranges raises :class:`~regiment.hierarchy.InvalidValue`, which names its field,
    so the message names the key (``budget.tokens: must be ...``), not the type.
    """
    keyed = _KEY_AT.match(message)
    if keyed:
        spot = _walk(raw, root, keyed.group("path"))
        where = f"{spot.path}: " if spot.path else ""
        return f"{where}every key must be text: {_lower(keyed.group('what'))}"
    match = _AT.match(message)
    assert match is not None  # the pattern matches any text
    spot = _walk(raw, root, match.group("path") or "")
    what = match.group("what")
    if isinstance(cause, InvalidValue):
        return f"{_join(spot.path, cause.field)}: {cause.problem}"
    field, problem = getattr(cause, "field", None), getattr(cause, "problem", None)
    if isinstance(field, str) and isinstance(problem, str):  # a Price's, as InvalidValue
        return f"{_join(spot.path, field)}: {problem}"
    if unknown := _UNKNOWN.match(what):
        return _unknown(spot, unknown.group("key"), fmt)
    if missing := _MISSING.match(what):
        key = missing.group("key")
        full = _join(spot.path, key)
        return f"{full}: this required key is missing (add `{_syntax(spot, key, fmt)}`)"
    kind = _unwrap(spot.type)
    if what.startswith("Invalid enum value") and typing.get_origin(kind) is typing.Literal:
        what += " (one of: " + ", ".join(repr(v) for v in typing.get_args(kind)) + ")"
    elif what.startswith("Expected `"):
        what += _write_instead(spot, fmt)
    return f"{spot.path}: {_lower(what)}" if spot.path else _lower(what)


_SCALARS: dict[object, tuple[str, str]] = {
    int: ("a whole number, without quotes", "8"),
    float: ("a number, without quotes", "5.0"),
    str: ("text in quotes", '"..."'),
    bool: ("true or false, without quotes", "true"),
}


def _write_instead(spot: _Spot, fmt: ConfigFormat) -> str:
    """``; write ...``: what the key takes, in the syntax of the file (a value of the
    wrong type; TOML has no null, so an optional key is left out instead)."""
    kind = _unwrap(spot.type)
    optional = kind is not spot.type and type(None) in typing.get_args(spot.type)
    left_out = ", or leave the key out" if optional else ""
    name, toml = key_text(spot.key), fmt != "yaml"
    if kind in _SCALARS:
        what, example = _SCALARS[kind]
        meant = _example(kind, spot.value)
        # YAML 1.1 (PyYAML) reads a number in exponent form without a dot (1e3) as text.
        text = spot.value.strip() if isinstance(spot.value, str) else ""
        why = f"; YAML reads {text} as text" if meant and not toml and "e" in text.lower() else ""
        example = meant or example
        shown = f" (`{name} = {example}`)" if toml else f" (`{name}: {example}`{why})"
        return f"; write {what}{shown if spot.key else ''}{left_out}"
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (tuple, list) and args and _is_struct(_unwrap(args[0])):
        entry = f"one `[[{spot.header}]]` table per entry" if toml else "one `- ` item per entry"
        return f"; write a list: {entry}"
    if origin in (tuple, list):
        return f"; write a list (`{name} = [...]`)" if toml and spot.key else "; write a list"
    if _is_struct(kind) or origin is dict:
        if not spot.path:
            return "; write the file as a mapping of keys (`name:`, `workers:`, ...)"
        if not spot.key:  # an item of a list of tables (`[[workers]]`, `- name: ...`)
            if toml:
                return f"; write a `[[{spot.header}]]` table"
            first = _fields(kind)[0] if _is_struct(kind) else "key"
            return f"; write the item as a mapping (`- {first}: ...`)"
        if origin is dict and args and _is_struct(_unwrap(args[-1])):  # `[checks.<name>]`
            entry = '"<model spec>"' if spot.header == "prices" else "<name>"
            if toml:
                return f"; write one `[{spot.header}.{entry}]` table per entry"
            return f"; write a mapping under `{name}:`, one `{entry}:` mapping per entry"
        return (
            f"; write a `[{spot.header}]` table" if toml else f"; write a mapping under `{name}:`"
        )
    return ""


def _example(kind: object, value: object) -> str | None:
    """The value written as ``kind``, when the file gave it as text (``"4"`` for 4)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if kind is int and text.isascii() and text.isdigit():
        return str(int(text))
    if kind is int and text.isascii() and "e" in text.lower():  # 1e3, as YAML leaves it
        try:
            number = float(text)
        except ValueError:
            return None
        return str(int(number)) if number.is_integer() and abs(number) < 1e18 else None
    if kind is float:
        try:
            number = float(text)
        except ValueError:
            return None
        return repr(number) if math.isfinite(number) else None
    if kind is bool and text.lower() in ("true", "false"):
        return text.lower()
    return None


def _lower(text: str) -> str:
    return " ".join((text[:1].lower() + text[1:]).split())


def _join(path: str, key: str) -> str:
    return f"{path}.{key_text(key)}" if path else key_text(key)


def _unknown(spot: _Spot, key: str, fmt: ConfigFormat) -> str:
    fields = _fields(spot.type)
    value = spot.value.get(key) if isinstance(spot.value, dict) else None
    written = _written(spot, key, value, fmt)
    close = difflib.get_close_matches(key, fields, n=1)
    if close:
        hint = f"did you mean `{_syntax(spot, close[0], fmt)}`?"
    else:
        hint = "expected one of: " + ", ".join(f"`{_syntax(spot, f, fmt)}`" for f in fields)
    kind = "table" if written.startswith("[") else "key"
    where = f"{spot.path}: " if spot.path else ""
    return f"{where}unknown {kind} `{written}` ({hint})"


def _written(spot: _Spot, key: str, value: object, fmt: ConfigFormat) -> str:
    """The unknown key as the user wrote it: a table header or ``key =`` (``key:`` in YAML)."""
    name = key_text(key)
    if fmt == "yaml":
        return f"{name}:"
    header = f"{spot.header}.{name}" if spot.header else name
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return f"[[{header}]]"
    if isinstance(value, dict):
        return f"[{header}]"
    return f"{name} ="


def _syntax(spot: _Spot, field: str, fmt: ConfigFormat) -> str:
    """How a file writes the known key ``field`` of the table at ``spot``."""
    if fmt == "yaml":
        return f"{field}:"
    header = f"{spot.header}.{field}" if spot.header else field
    kind = _unwrap(_field_types(spot.type).get(field))
    if _is_struct(kind):
        return f"[{header}]"
    origin = typing.get_origin(kind)
    if origin is dict and _is_struct(_unwrap(typing.get_args(kind)[1])):
        return f"[{header}.<name>]"  # a table of named tables: [checks.<name>]
    if origin is dict:
        return f"[{header}]"
    if origin is tuple and _is_struct(_unwrap(typing.get_args(kind)[0])):
        return f"[[{header}]]"
    return f"{field} ="


def _walk(raw: object, root: type, path: str) -> _Spot:
    """Follow msgspec's ``.a[0].b`` path through the data and the types.

    msgspec writes a dict value's key as ``[...]``; the key is found again by
    decoding each entry of that dict, in order, as msgspec did: the first
    that fails is the one it meant.
    """
    spot = _Spot("", "", raw, root)
    for segment in _SEGMENT.finditer(path):
        kind = _unwrap(spot.type)
        node = spot.value
        if segment.group("field") is not None:
            name = segment.group("field")
            value = node.get(name) if isinstance(node, dict) else None
            header = _join(spot.header, name)
            field_type = _field_types(kind).get(name)
            spot = _Spot(_join(spot.path, name), header, value, field_type, name)
        elif segment.group("index") != "...":
            index = int(segment.group("index"))
            item = node[index] if isinstance(node, list) and index < len(node) else None
            args = typing.get_args(kind)
            spot = _Spot(f"{spot.path}[{index}]", spot.header, item, args[0] if args else None)
        else:
            value_type = typing.get_args(kind)[1] if typing.get_origin(kind) is dict else None
            key, item = _failing_entry(node, value_type)
            spot = _Spot(_join(spot.path, key), _join(spot.header, key), item, value_type, key)
    return spot


def _failing_entry(node: object, value_type: object) -> tuple[str, object]:
    if isinstance(node, dict) and value_type is not None:
        for key, item in node.items():
            try:
                msgspec.convert(item, value_type)
            except msgspec.ValidationError:
                return str(key), item
    return "<name>", None


def _unwrap(kind: object) -> object:
    """``X | None`` as ``X``."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        members = [a for a in typing.get_args(kind) if a is not type(None)]
        return members[0] if len(members) == 1 else kind
    return kind


def _is_struct(kind: object) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)


def _field_types(kind: object) -> dict[str, object]:
    if not _is_struct(kind):
        return {}
    assert isinstance(kind, type)
    return {f.name: f.type for f in msgspec.structs.fields(kind)}


def _fields(kind: object) -> list[str]:
    return list(_field_types(_unwrap(kind)))


def settings_error(error: ConfigError, table: object, source: str, key: str) -> ConfigError:
    """``error`` (``ModelSettings.from_mapping``'s, about the ``key`` table of ``source``)
    with the "write ..." advice every other key's wrong type gets; a value out of range
    already says what it must be, and is ``error`` as it is."""
    cause = error.__cause__
    if not isinstance(cause, msgspec.ValidationError):
        return error
    fmt: ConfigFormat = "yaml" if source.lower().endswith((".yaml", ".yml")) else "toml"
    why = explain(str(cause), table, ModelSettings, fmt, cause=cause.__cause__)
    if fmt == "toml":  # `[extra]` is no header in this file: an inline table goes anywhere
        why = why.replace("write a `[extra]` table", "write a table (`extra = {...}`)")
    told = ConfigError(f"{source}: {key}.{why}")
    told.__cause__ = cause
    return told
