"""The seam between a tool and whatever checks its arguments.

A Python function's arguments are checked by ``ArgumentSpec`` (pydantic over the
signature); an MCP server's tool by its own JSON Schema. ``Tool`` takes either.
"""

from __future__ import annotations

from typing import Protocol

from regiment._json import JsonObject
from regiment.tools._context import RunContext
from regiment.tools._schema import BoundArguments

__all__ = ("ArgumentValidator",)


class ArgumentValidator(Protocol):
    """Validates the arguments of one tool and describes them as a JSON Schema."""

    @property
    def schema(self) -> JsonObject:
        """The JSON Schema the model is shown."""
        ...

    @property
    def names(self) -> tuple[str, ...]:
        """The parameter names (idempotency keys may only name these)."""
        ...

    def validate(self, arguments: object) -> BoundArguments | str:
        """The arguments, bound for the call, or what is wrong with them."""
        ...

    def call_arguments(
        self, bound: BoundArguments, context: RunContext[object] | None
    ) -> tuple[tuple[object, ...], dict[str, object]]:
        """The positional and keyword arguments to call the function with: ``bound``,
        plus the run's context wherever the function takes it (``None`` outside a run)."""
        ...
