"""Records to bytes and back, and the columns a store indexes them by."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, get_args

import msgspec

from regiment._version import __version__
from regiment.errors import JournalError
from regiment.journal._records import (
    ApprovalDecided,
    ApprovalRequested,
    ModelCallFinished,
    Record,
    RunFinished,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.journal._store import Pending
from regiment.journal._views import Lease

__all__ = (
    "KNOWN_KINDS",
    "NewerRecord",
    "approval_key",
    "decode",
    "encode_pending",
    "kind_of",
    "model_key",
    "tool_key",
)

_ENCODER: Final = msgspec.json.Encoder()
KNOWN_KINDS: Final = frozenset(str(cls.__struct_config__.tag) for cls in get_args(Record))
_TAG_FIELD: Final = str(RunFinished.__struct_config__.tag_field)
_DECODER: Final = msgspec.json.Decoder(Record)


def tool_key(plan_version: int, step_id: str, call_index: int) -> str:
    """The look-up key of a tool call's intent and result (the step id last: it may hold ``/``)."""
    return f"tool/{plan_version}/{call_index}/{step_id}"


def model_key(call_key: str) -> str:
    """The look-up key of a model call's response."""
    return f"model/{call_key}"


def approval_key(approval_id: str) -> str:
    """The look-up key of an approval's request and decision."""
    return f"approval/{approval_id}"


def kind_of(record: Record) -> str:
    """The record's tag (``"run_created"``, ``"tool_call_started"``, ...)."""
    return str(type(record).__struct_config__.tag)


def _tool(record: ToolCallStarted | ToolCallFinished) -> str:
    return tool_key(record.plan_version, record.step_id, record.call_index)


def _approval(record: ApprovalRequested | ApprovalDecided) -> str:
    return approval_key(record.approval_id)


def _model(record: ModelCallFinished) -> str:
    return model_key(record.call_key)


# Per record type: its look-up key and its effect on the run's pending approvals.
_KEYS: Final[dict[type, Callable[[Any], str]]] = {
    ToolCallStarted: _tool,
    ToolCallFinished: _tool,
    ModelCallFinished: _model,
    ApprovalRequested: _approval,
    ApprovalDecided: _approval,
}
_APPROVALS: Final[dict[type, int]] = {ApprovalRequested: 1, ApprovalDecided: -1}
_TAGS: Final[dict[type, str]] = {}


def encode_pending(lease: Lease, seq: int, record: Record, now: float) -> Pending:
    """The record as a row for its store, with the run-level effects it has."""
    cls = type(record)
    key = _KEYS.get(cls)
    kind = _TAGS.get(cls) or _TAGS.setdefault(cls, kind_of(record))
    final = record.status if isinstance(record, RunFinished) else None
    # Positional: a NamedTuple built with keywords costs three times as much (hot path).
    return Pending(
        lease.run_id,
        lease.owner,
        lease.token,
        seq,
        kind,
        key(record) if key else None,
        _ENCODER.encode(record),
        now,
        final,
        _APPROVALS.get(cls, 0),
    )


class NewerRecord(JournalError):
    """A record of a kind this regiment does not know: a newer regiment wrote it."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def decode(body: bytes, where: str) -> Record:
    """One stored record.

    Raises:
        NewerRecord: the record is of a kind this version does not know.
        JournalError: the bytes are not a record this version understands.
    """
    try:
        return _DECODER.decode(body)
    except msgspec.DecodeError as exc:
        kind = _unknown_kind(body)
        if kind is not None:
            raise NewerRecord(
                f"journal {where} holds a record of kind {kind!r}, which this regiment "
                f"({__version__}) does not know: a newer regiment wrote it. Upgrade regiment "
                "(to the version that wrote the journal, or later) to resume the run or read "
                "all of it; the journal was left untouched.",
                kind=kind,
            ) from exc
        raise JournalError(f"journal {where} holds a record that cannot be read: {exc}") from exc


def _unknown_kind(body: bytes) -> str | None:
    """The record's tag, if it is a tagged record of a kind this regiment does not know."""
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    kind = raw.get(_TAG_FIELD) if isinstance(raw, dict) else None
    return kind if isinstance(kind, str) and kind not in KNOWN_KINDS else None
