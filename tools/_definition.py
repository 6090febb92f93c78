"""What a model is told about a tool: the provider-neutral definition."""

from __future__ import annotations

import msgspec

from regiment._json import JsonObject

__all__ = ("ToolDefinition",)


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """A tool as a model sees it.

    Attributes:
        name: the name the model calls it by (``^[a-zA-Z0-9_-]{1,64}$``).
        description: what it does and when to use it.
        input_schema: a JSON Schema object for its arguments, in the form the
            Anthropic Messages API takes as ``input_schema`` (``"type": "object"``).
    """

    name: str
    description: str
    input_schema: JsonObject
