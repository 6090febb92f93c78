"""Pieces of a tool's argument schema that ``regiment.tools._schema`` builds on: the
schema as the model is shown it (pydantic's ``title`` keywords dropped), and the error
for a parameter whose type cannot be described as JSON."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

from regiment._json import JsonObject, JsonValue
from regiment.errors import ConfigError

__all__ = ("clean_schema", "schema_error")

# JSON Schema keywords whose value is a map of names to schemas, or one schema,
# or a list of schemas; everything else (enum, default, const, ...) is data.
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
_SCHEMA_ONE = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
)
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


def clean_schema(schema: JsonValue) -> JsonObject:
    """Drop pydantic's generated ``title`` keywords; they only repeat the names."""
    cleaned = _clean(schema)
    assert isinstance(cleaned, dict)
    return cleaned


def _clean(schema: JsonValue) -> JsonValue:
    if not isinstance(schema, dict):
        return schema
    out: JsonObject = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _clean(sub) for name, sub in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _clean(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_clean(sub) for sub in value]
        else:
            out[key] = value
    return out


def schema_error(
    exc: Exception,
    fields: Mapping[str, tuple[object, object]],
    params: Sequence[inspect.Parameter],
    tool_name: str,
) -> ConfigError:
    """The error for a tool whose arguments pydantic could not describe (``exc``): the
    first parameter that alone cannot be, its type and what to use instead; pydantic's
    own advice (``arbitrary_types_allowed``, ``__get_pydantic_core_schema__``) is for a
    model's author, not a tool's."""
    import pydantic

    for (key, spec), param in zip(fields.items(), params, strict=True):
        try:
            pydantic.create_model("one", **{key: spec}).model_json_schema()  # type: ignore[call-overload]
        except pydantic.PydanticUserError as error:
            if error.code == "typed-dict-version":  # "TypedDict" is right, as imported is not
                return ConfigError(
                    f"parameter {param.name!r} of tool {tool_name!r} has type "
                    f"{_type_text(param.annotation)}, which holds a typing.TypedDict: "
                    "before Python 3.12 pydantic reads only typing_extensions.TypedDict, "
                    "so define it with that (from typing_extensions import TypedDict)"
                )
            return ConfigError(
                f"parameter {param.name!r} of tool {tool_name!r} has type "
                f"{_type_text(param.annotation)}, which cannot be described "
                "as JSON for the model to send: annotate it with a JSON type (str, int, "
                "float, bool, a list or dict of them, a dataclass, TypedDict or pydantic "
                "model of them); a value the application supplies (a client, a lock) is "
                "bound with functools.partial, or reached through a RunContext parameter"
            )
    first = str(exc).strip().splitlines()[:1]
    said = first[0] if first else type(exc).__name__
    return ConfigError(f"cannot build a JSON schema for tool {tool_name!r}: {said}")


def _type_text(annotation: object) -> str:
    """``annotation`` as its module and name (``threading.Lock`` is a function:
    ``_thread.allocate_lock``), not a ``repr`` such as ``<built-in function ...>``."""
    if inspect.isroutine(annotation):
        return f"{annotation.__module__ or '?'}.{annotation.__qualname__}"
    return inspect.formatannotation(annotation)
