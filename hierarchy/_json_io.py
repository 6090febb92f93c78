"""Results and events as JSON, in one call each way (msgspec)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import msgspec

from regiment.errors import ConfigError
from regiment.hierarchy._result import RunResult, with_output
from regiment.hierarchy.events import Event

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ("event_from_json", "result_from_json", "to_json")

_T = TypeVar("_T")
_RESULTS = msgspec.json.Decoder(RunResult)
_EVENTS: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


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
        ConfigError: ``data`` is not a result as ``to_json`` writes it (also a ``ValueError``).
        pydantic.ValidationError: the answer does not match ``output_type``.
    """
    result = _decode(_RESULTS, data, "result_from_json", "a RunResult")
    if output_type is not None and result.status == "completed":
        return with_output(result, output_type.model_validate_json(result.answer))
    return result


def event_from_json(data: bytes | str) -> Event:
    """The event that ``to_json`` wrote.

    Raises:
        ConfigError: ``data`` is not an event as ``to_json`` writes it (also a ``ValueError``).
    """
    return _decode(_EVENTS, data, "event_from_json", "an event")


class _Unreadable(ConfigError, ValueError):
    """JSON that is not what ``to_json`` wrote (a ``ValueError`` too, as msgspec's
    ``DecodeError`` that it replaces was)."""


def _decode(decoder: msgspec.json.Decoder[_T], data: bytes | str, where: str, what: str) -> _T:
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:  # ValidationError too: the wrong shape
        raise _Unreadable(
            f"{where}: the data is not {what} as to_json writes it ({exc}); "
            "pass it the JSON that to_json gave"
        ) from exc
    except RecursionError as exc:  # arrays or objects nested thousands deep
        raise _Unreadable(
            f"{where}: the JSON nests too deep to read, as {what} that to_json wrote "
            "never does; pass it the JSON that to_json gave"
        ) from exc
