"""Approval gates: the application decides whether a side-effecting call may run."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable
from typing import Protocol, TypeAlias

import msgspec

from regiment._json import JsonObject
from regiment._misuse import ConfigStruct

__all__ = (
    "ApprovalDecision",
    "ApprovalRequest",
    "Approve",
    "Approver",
    "Deny",
    "EditArguments",
    "ask_approver",
)


class ApprovalRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A call waiting for approval.

    Attributes:
        tool_name: the tool the model called.
        call_id: the model's id for this call.
        arguments: the validated arguments, defaults filled in, as JSON.
        description: the tool's description, for showing to a human.
        idempotency_key: the key the call runs with: in a run, the one its body gets in
            ``RunContext.idempotency_key`` (the tool's declared key, else one derived from
            run, plan version, step and call); outside a run, the declared key or ``None``.
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


class Approve(ConfigStruct, frozen=True, kw_only=True, tag="approve"):
    """Run the call as the model asked."""


class Deny(ConfigStruct, frozen=True, tag="deny"):
    """Do not run the call; the model is told ``reason`` (``Deny("over the limit")`` or
    ``Deny(reason=...)``)."""

    reason: str


class EditArguments(ConfigStruct, frozen=True, tag="edit"):
    """Run the call with these arguments instead (they are validated again):
    ``EditArguments({"amount": 100})`` or ``EditArguments(arguments=...)``.

    Attributes:
        arguments: the complete replacement arguments.
        reason: why they were changed, for the record.
    """

    arguments: JsonObject
    reason: str = ""


ApprovalDecision: TypeAlias = Approve | Deny | EditArguments


class Approver(Protocol):
    """Decides on calls to tools marked ``requires_approval=True``.

    Any ``async def approver(request: ApprovalRequest) -> ApprovalDecision`` fits, and so
    does a plain ``def`` (it runs in a worker thread, as a sync tool does, so one that
    blocks on a person does not hold the event loop). It may wait as long as it needs (a
    human clicking a button); the wait does not hold a concurrency slot, nor count
    against the run's ``wall_clock`` or the step's ``step_timeout``. An exception it
    raises, or an answer that is not a decision, fails the call with an
    ``ApprovalError`` naming the tool (the exception as its cause), because the approver
    is the application's code, not the model's mistake: the step fails.
    """

    def __call__(
        self, request: ApprovalRequest, /
    ) -> ApprovalDecision | Awaitable[ApprovalDecision]:
        """Return the decision for ``request`` (or an awaitable of it)."""
        ...


async def ask_approver(approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    """``approver``'s decision on ``request``: an ``async def`` one is awaited, a plain
    function runs in a worker thread.

    Raises:
        NotADecision: the approver's answer is not a decision (a ``TypeError``).
    """
    if _is_async(approver):
        answer = await approver(request)  # type: ignore[misc]  # (async: an awaitable)
    else:
        from regiment.tools._thread import run_sync_abandonable  # (threads: only if used)

        answer = await run_sync_abandonable(functools.partial(approver, request))
        if inspect.isawaitable(answer):  # a plain function that hands back a coroutine
            answer = await answer
    if not isinstance(answer, Approve | Deny | EditArguments):
        raise NotADecision(answer)
    try:  # as the journal writes it and reads it back (a resumed run journals it)
        msgspec.json.decode(msgspec.json.encode(answer), type=ApprovalDecision)
    except (TypeError, ValueError) as exc:  # Deny(reason=None): an unreadable journal
        raise NotADecision(answer, str(exc)) from None
    return answer


class NotADecision(TypeError):
    """An approver answered something that is not a decision."""

    def __init__(self, answer: object, problem: str | None = None) -> None:
        self.what = f"returned the {type(answer).__name__} {answer!r}, not a decision"
        if problem is not None:  # a decision whose fields are not what it declares
            self.what = f"returned {answer!r}, which does not hold what it declares ({problem})"
        super().__init__(
            f"the approver {self.what}; return Approve(), Deny(reason=...) or "
            "EditArguments(arguments=...)"
        )


def _is_async(fn: object) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    )
