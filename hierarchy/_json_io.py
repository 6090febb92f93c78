"""Results and events as JSON, in one call each way (msgspec)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from regiment.hierarchy._result import RunResult, with_output
from regiment.hierarchy.events import Event

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ("event_from_json", "result_from_json", "to_json")


def to_json(value: RunResult | Event) -> bytes:
    """A result or an event as JSON (events carry a ``"type"`` tag naming their class)."""
    return msgspec.json.encode(value)


def result_from_json(data: bytes | str, *, output_type: type[BaseModel] | None = None) -> RunResult:
    """The ``RunResult`` that ``to_json`` wrote.

    Args:
        data: the JSON.
        output_type: the team's ``output_type``: a completed run's ``output`` is
            rebuilt by validating its ``answer`` (the JSON text) against it.

    Raises:
        pydantic.ValidationError: the answer does not match ``output_type``.
    """
    result = msgspec.json.decode(data, type=RunResult)
    if output_type is not None and result.status == "completed":
        return with_output(result, output_type.model_validate_json(result.answer))
    return result


def event_from_json(data: bytes | str) -> Event:
    """The event that ``to_json`` wrote."""
    return msgspec.json.decode(data, type=Event)
