"""JSON value types shared by every room (imports nothing from regiment)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

__all__ = ("JsonObject", "JsonValue")

if TYPE_CHECKING:
    JsonValue: TypeAlias = (
        bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
    )
else:
    # msgspec cannot decode recursive aliases; at run time it is "any JSON value".
    JsonValue = Any

JsonObject: TypeAlias = dict[str, JsonValue]
