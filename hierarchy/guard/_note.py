"""What a guard did, as a record a step report and the run's events carry."""

from __future__ import annotations

from typing import Literal, TypeAlias, final

import msgspec

__all__ = ("GuardNote", "SubjectKind")

SubjectKind: TypeAlias = Literal[
    "model_request", "model_reply", "plan", "tool_call", "tool_result", "answer"
]


@final
class GuardNote(msgspec.Struct, frozen=True, kw_only=True):
    """One guard's trip or rewrite, where it happened (``worker``/``step_id`` for a
    step's guards, ``role`` for the planner side)."""

    guardrail: str
    subject: SubjectKind
    outcome: Literal["tripped", "rewrote"]
    reason: str = ""
    role: str = ""
    worker: str | None = None
    step_id: str | None = None
