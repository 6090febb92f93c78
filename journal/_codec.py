"""Records to bytes and back, and the columns a store indexes them by."""

from __future__ import annotations

from typing import Final

import msgspec

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

__all__ = ("approval_key", "decode", "encode_pending", "kind_of", "model_key", "tool_key")

_ENCODER: Final = msgspec.json.Encoder()
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


def _key(record: Record) -> str | None:
    match record:
        case ToolCallStarted() | ToolCallFinished():
            return tool_key(record.plan_version, record.step_id, record.call_index)
        case ModelCallFinished():
            return model_key(record.call_key)
        case ApprovalRequested() | ApprovalDecided():
            return approval_key(record.approval_id)
        case _:
            return None


def encode_pending(lease: Lease, seq: int, record: Record, now: float) -> Pending:
    """The record as a row for its store, with the run-level effects it has."""
    final = record.status if isinstance(record, RunFinished) else None
    delta = (
        1
        if isinstance(record, ApprovalRequested)
        else -1
        if isinstance(record, ApprovalDecided)
        else 0
    )
    return Pending(
        run_id=lease.run_id,
        owner=lease.owner,
        token=lease.token,
        seq=seq,
        kind=kind_of(record),
        key=_key(record),
        body=_ENCODER.encode(record),
        recorded_at=now,
        final_status=final,
        approvals_delta=delta,
    )


def decode(body: bytes, where: str) -> Record:
    """One stored record.

    Raises:
        JournalError: the bytes are not a record this version understands.
    """
    try:
        return _DECODER.decode(body)
    except msgspec.DecodeError as exc:
        raise JournalError(f"journal {where} holds a record that cannot be read: {exc}") from exc
