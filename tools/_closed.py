"""Nested objects in a tool's arguments take only the keys they name.

The arguments model forbids unknown top-level arguments, but a pydantic model,
dataclass or ``TypedDict`` inside it keeps its own ``extra`` setting, which is
``"ignore"`` unless its author chose: a key the model misspelt (``zipcode`` for
``zip_code``) was dropped without a word, and the call ran without it. Here each
such class that does not choose is closed, in its schema (``additionalProperties:
false``, as at the top) and in validation (an unknown key is an error the model is
told of). A class that sets ``extra`` itself (``"allow"``, or ``"ignore"``) keeps it.

Validation builds the arguments model's validator again from its core schema with
the closed classes marked so, and without the validators their classes carry
ready-made (pydantic reuses a complete class's own validator, ``extra`` setting and
all, wherever the class appears: so it needs ``_use_prebuilt=False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from regiment._json import JsonObject

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import CoreSchema, SchemaValidator

__all__ = ("closed_json_schema", "closed_validator", "fields_at", "node_at")

_CLASSES = frozenset({"model", "dataclass", "typed-dict"})
# Keys whose values are data or Python objects, not schemas: left as they are.
_DATA = frozenset({"cls", "default", "metadata", "serialization", "expected", "ref", "config"})


def chosen_extra(cls: object) -> str | None:
    """The ``extra`` setting ``cls`` (a model, dataclass or ``TypedDict``) chose, if any."""
    from pydantic import BaseModel

    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return cls.model_config.get("extra")
    config = getattr(cls, "__pydantic_config__", None)  # pydantic dataclasses, with_config
    return config.get("extra") if isinstance(config, Mapping) else None


def _closes(node: Mapping[str, object]) -> bool:
    """Whether ``node`` (a core schema) is of a class to close."""
    from pydantic import RootModel

    cls = node.get("cls")
    if node.get("type") not in _CLASSES or node.get("root_model"):
        return False
    if isinstance(cls, type) and issubclass(cls, RootModel):
        return False
    return chosen_extra(cls) is None


def _closed(node: object, changed: list[bool]) -> object:
    """``node`` with each class to close set to forbid unknown keys (new dicts and
    lists along the way; everything else shared)."""
    if isinstance(node, list):
        return [_closed(item, changed) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: v if k in _DATA else _closed(v, changed) for k, v in node.items()}
    if _closes(node):
        kind = node["type"]
        if kind == "model":
            config = cast(Mapping[str, object], node.get("config") or {})
            if config.get("extra_fields_behavior") != "forbid":
                out["config"] = {**config, "extra_fields_behavior": "forbid"}
                changed.append(True)
        elif kind == "typed-dict":
            if node.get("extra_behavior") != "forbid":
                out["extra_behavior"] = "forbid"
                changed.append(True)
        else:  # a dataclass: its arguments schema says it
            inner = cast(dict[str, object], out["schema"])
            if inner.get("extra_behavior") != "forbid":
                out["schema"] = {**inner, "extra_behavior": "forbid"}
                changed.append(True)
    return out


def closed_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """A validator for ``model`` with its nested classes closed; ``None`` when none
    needs closing (``model``'s own validator is the same then)."""
    from pydantic_core import SchemaValidator

    changed: list[bool] = []
    schema = _closed(model.__pydantic_core_schema__, changed)
    if not changed:
        return None
    return SchemaValidator(cast("CoreSchema", schema), None, _use_prebuilt=False)


def closed_json_schema(model: type[BaseModel]) -> JsonObject:
    """``model``'s JSON Schema, each nested class it closes ``additionalProperties: false``."""
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
    from pydantic_core import core_schema

    def closing(value: JsonSchemaValue, node: Mapping[str, object]) -> JsonSchemaValue:
        if _closes(node) and value.get("type") == "object":
            value.setdefault("additionalProperties", False)
        return value

    class Closed(GenerateJsonSchema):
        def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
            return closing(super().model_schema(schema), schema)

        def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
            return closing(super().dataclass_schema(schema), schema)

        def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
            return closing(super().typed_dict_schema(schema), schema)

    return cast(JsonObject, model.model_json_schema(schema_generator=Closed))


def fields_at(schema: JsonObject, path: tuple[object, ...]) -> list[str] | None:
    """The property names of the object at ``path`` (keys and list indexes) in the
    arguments that ``schema`` describes; ``None`` when that is not one object schema
    (a union of objects, say)."""
    node = node_at(schema, path)
    properties = None if node is None else node.get("properties")
    return list(properties) if isinstance(properties, dict) else None


def node_at(schema: JsonObject, path: tuple[object, ...]) -> dict[str, object] | None:
    """The schema of the value at ``path`` (keys and list indexes) in the arguments
    that ``schema`` describes, ``$ref`` followed; ``None`` when that is not one schema."""
    node: object = schema
    for part in path:
        node = _resolved(schema, node)
        if node is None:
            return None
        if isinstance(part, int):
            node = node.get("items")
        elif isinstance(part, str):
            properties = node.get("properties")
            node = properties.get(part) if isinstance(properties, dict) else None
        else:
            return None
    return _resolved(schema, node)


def _resolved(root: JsonObject, node: object) -> dict[str, object] | None:
    """``node`` with ``$ref`` followed (local ones) and an optional's ``null`` branch
    left out; ``None`` when that is not a single schema."""
    for _ in range(32):  # a $ref chain longer than this is not followed
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            defs = root.get("$defs")
            node = defs.get(ref.removeprefix("#/$defs/")) if isinstance(defs, dict) else None
            continue
        branches = node.get("anyOf")
        if isinstance(branches, list):
            kept = [b for b in branches if b != {"type": "null"}]
            if len(kept) != 1:
                return None
            node = kept[0]
            continue
        return cast(dict[str, object], node)
    return None
