"""Approval gates: the application decides whether a side-effecting call may run."""

from __future__ import annotations

from typing import Protocol, TypeAlias

import msgspec

from regiment._json import JsonObject

__all__ = ("ApprovalDecision", "ApprovalRequest", "Approve", "Approver", "Deny", "EditArguments")


class ApprovalRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A call waiting for approval.

    Attributes:
        tool_name: the tool the model called.
        call_id: the model's id for this call.
        arguments: the validated arguments, defaults filled in, as JSON.
        description: the tool's description, for showing to a human.
        idempotency_key: the call's idempotency key, if the tool declares one.
        request_id: a run's stable id for the request (empty outside a run);
            ``RunningTeam.approve`` takes it.
        run_id: the run it belongs to (the top-level run, for nested teams).
        worker: the worker's path through nested teams (``team/worker``,
            ``team/sub-team/team/worker``).
        plan_version: the top-level run's plan version of the step.
        step_id: the top-level run's step the call belongs to.
        call_index: the call's number within its worker step (from 0).
        expires_at: when an unanswered request turns into a denial (Unix time).
    """

    tool_name: str
    call_id: str
    arguments: JsonObject
    description: str = ""
    idempotency_key: str | None = None
    request_id: str = ""
    run_id: str = ""
    worker: str = ""
    plan_version: int = 0
    step_id: str = ""
    call_index: int = 0
    expires_at: float | None = None


class Approve(msgspec.Struct, frozen=True, kw_only=True, tag="approve"):
    """Run the call as the model asked."""


class Deny(msgspec.Struct, frozen=True, kw_only=True, tag="deny"):
    """Do not run the call; the model is told ``reason``."""

    reason: str


class EditArguments(msgspec.Struct, frozen=True, kw_only=True, tag="edit"):
    """Run the call with these arguments instead (they are validated again).

    Attributes:
        arguments: the complete replacement arguments.
        reason: why they were changed, for the record.
    """

    arguments: JsonObject
    reason: str = ""


ApprovalDecision: TypeAlias = Approve | Deny | EditArguments


class Approver(Protocol):
    """Decides on calls to tools marked ``requires_approval=True``.

    Any ``async def approver(request: ApprovalRequest) -> ApprovalDecision`` fits.
    It may wait as long as it needs (a human clicking a button); the wait does not
    hold a concurrency slot. An exception it raises, or an answer that is not a
    decision, fails the call with an ``ApprovalError`` naming the tool (the exception
    as its cause), because the approver is the application's code, not the model's
    mistake: the step fails.
    """

    async def __call__(self, request: ApprovalRequest, /) -> ApprovalDecision:
        """Return the decision for ``request``."""
        ...
