"""JSON value types shared by every room (imports nothing from regiment)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

__all__ = ("UNPARSED_ARGUMENTS", "JsonObject", "JsonValue")

if TYPE_CHECKING:
    JsonValue: TypeAlias = (
        bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
    )
else:
    # msgspec cannot decode recursive aliases; at run time it is "any JSON value".
    JsonValue = Any

JsonObject: TypeAlias = dict[str, JsonValue]

# The key a model adapter puts a tool call's arguments under when they are not a JSON
# object (text that does not parse, a list, a number); a tool never runs on them, and
# the model is told what it sent (regiment.tools).
UNPARSED_ARGUMENTS = "_unparsed_arguments"
