"""Where a pydantic error is in a tool's arguments when a parameter is a union.

pydantic names each form of a union it tried in an error's location, by its Python
type (``a.int``, ``a.str``, ``a.dict[str,int]``, ``a.constrained-int``,
``a.function-after[...]``; a tagged union by its tag, ``a.cat``). Those are no keys
of the arguments: the model reads ``a.int`` as a field ``int`` to send. Here each
location is walked along the JSON schema the model was shown, the union forms in it
taken out (``Walked.loc``) and kept aside (``Walked.forms``), each with the schema
node of the form it was (its position among the union's ``anyOf``, or the tag's
branch of a tagged union), so that the errors of one union can be worded together
in JSON words: ``an integer or a string``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from regiment._json import JsonObject

__all__ = ("Form", "Walked", "branches", "single", "walk")

_NULL = {"type": "null"}


@dataclass(frozen=True)
class Form:
    """A union met on the way: where it is (union forms left out), the form an error
    was in (its index in ``options``), the forms the schema allows, and whether
    ``null`` is one of them."""

    at: tuple[object, ...]
    index: int
    options: tuple[Mapping[str, object], ...]
    nullable: bool


@dataclass
class Walked:
    """One error's location without union forms, the unions on the way, and the
    schema nodes of its value and of the object holding it (``None``: not known)."""

    error: Mapping[str, object]
    loc: tuple[object, ...]
    forms: tuple[Form, ...] = ()
    node: Mapping[str, object] | None = None
    parent: Mapping[str, object] | None = None
    nullable: bool = False  # ``null`` is one of the value's forms too


def _deref(root: JsonObject, node: object) -> Mapping[str, object] | None:
    for _ in range(32):  # a $ref chain longer than this is not followed
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
            return cast(Mapping[str, object], node)
        defs = root.get("$defs")
        node = defs.get(ref.removeprefix("#/$defs/")) if isinstance(defs, dict) else None
    return None


def branches(
    root: JsonObject, node: Mapping[str, object] | None
) -> tuple[tuple[Mapping[str, object], ...], bool] | None:
    """The forms of a union ``node`` (``null`` left out) and whether ``null`` is one;
    ``None`` when ``node`` is no union."""
    listed = None if node is None else node.get("anyOf", node.get("oneOf"))
    if not isinstance(listed, list):
        return None
    kept = tuple(b for b in listed if isinstance(b, dict) and b != _NULL)
    return kept, len(kept) < len(listed)


def single(root: JsonObject, node: object) -> tuple[Mapping[str, object] | None, bool]:
    """``node`` with ``$ref`` followed and an optional's ``null`` left out (a union of
    several forms stays as it is), and whether it was optional."""
    nullable = False
    resolved = _deref(root, node)
    for _ in range(32):
        split = branches(root, resolved)
        if split is None or len(split[0]) != 1:
            return resolved, nullable
        nullable = nullable or split[1]
        resolved = _deref(root, split[0][0])
    return resolved, nullable


def _form(root: JsonObject, union: Mapping[str, object], tag: object, order: list[object]) -> int:
    """Which form of ``union`` pydantic's ``tag`` names: a tagged union's by its
    mapping, else by the order the tags came in (pydantic tries, and reports, the
    forms in the order the schema lists them)."""
    found = union.get("discriminator")
    mapping = found.get("mapping") if isinstance(found, dict) else None
    if isinstance(mapping, dict) and isinstance(tag, str) and tag in mapping:
        split = branches(root, union)
        target = {"$ref": mapping[tag]}
        if split is not None and target in split[0]:
            return split[0].index(target)
    if tag not in order:
        order.append(tag)
    return order.index(tag)


def _inside(node: Mapping[str, object] | None, part: object) -> object:
    if node is None:
        return None
    if isinstance(part, int):
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and 0 <= part < len(prefix):
            return prefix[part]
        return node.get("items")
    properties = node.get("properties")
    if isinstance(properties, dict) and part in properties:
        return properties[part]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def walk(error: Mapping[str, object], root: JsonObject, seen: dict[object, list[object]]) -> Walked:
    """``error``'s location walked along ``root``; ``seen``: the tags met so far at
    each union, shared by the errors of one validation (their order numbers the forms)."""
    loc = error.get("loc", ())
    assert isinstance(loc, tuple)
    node, nullable = single(root, root)
    parent: Mapping[str, object] | None = None
    kept: list[object] = []
    forms: list[Form] = []
    for part in loc:
        split = branches(root, node)
        if node is not None and split is not None:  # a union of several: ``part`` is a form
            at = (tuple(kept), tuple((f.at, f.index) for f in forms))
            index = _form(root, node, part, seen.setdefault(at, []))
            forms.append(Form(tuple(kept), index, split[0], split[1]))
            form = split[0][index] if index < len(split[0]) else None
            node, nullable = single(root, form)
            continue
        parent = node
        node, nullable = single(root, _inside(node, part))
        kept.append(part)
    return Walked(error, tuple(kept), tuple(forms), node, parent, nullable)
