"""A worker's side of approvals: the approver it hands each tool call.

The tool set's own ``approver`` (an in-process policy) answers first when there
is one; otherwise the call becomes a pending request on the team's
:class:`~regiment.hierarchy._approvals.ApprovalDesk` and waits there.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, final

import anyio
import msgspec

from regiment.hierarchy._approvals import (
    ApprovalDesk,
    EditJudged,
    StepAt,
    ask_policy,
    decision_name,
    request_id_for,
)
from regiment.hierarchy._messages import AssignStep
from regiment.hierarchy.guard._tool_guard import edit_check
from regiment.hierarchy.workers._not_run import held_back
from regiment.hierarchy.workers._progress import StepProgress
from regiment.models import ToolCallPart
from regiment.telemetry import Telemetry
from regiment.telemetry import semconv as sc
from regiment.tools import ApprovalDecision, ApprovalRequest, Approver, Toolset

__all__ = ("ApprovalGate", "Approvals")


class Approvals(Protocol):
    """What a step's tool loop asks for each tool call: :class:`ApprovalGate` in the
    team's process; on a Ray replica, one that asks the caller's gate over the wire."""

    def approver(
        self,
        toolset: Toolset,
        assign: AssignStep,
        call_index: int,
        tool_name: str,
        progress: StepProgress | None = None,
    ) -> Approver | None:
        """The approver for call number ``call_index`` of ``assign``'s step, if it needs one
        (``progress``: the step's, which says whether a cut is its run's pause)."""
        ...


@final
class ApprovalGate:
    """Makes the approver for each tool call of one worker.

    Args:
        desk: the started team's desk.
        worker: the worker's path through nested teams (its actor's name).
        timeout: seconds an unanswered request waits before it counts as denied.
        telemetry: where the ``regiment.approval`` span of each wait goes.
    """

    def __init__(
        self, desk: ApprovalDesk, worker: str, timeout: float | None, telemetry: Telemetry
    ) -> None:
        self._desk = desk
        self._worker = worker
        self._timeout = timeout
        self._telemetry = telemetry

    def approver(
        self,
        toolset: Toolset,
        assign: AssignStep,
        call_index: int,
        tool_name: str,
        progress: StepProgress | None = None,
    ) -> Approver | None:
        """The approver for call number ``call_index`` of ``assign``'s step.

        ``None`` when the tool never needs approval (or is unknown: the tool set
        answers that call with its own error), so most calls build nothing here.
        The tool set's own approver (the application's policy) gets the request with
        the same fields a pending request has; otherwise the call waits on the desk.
        Either way the run's wall clock and the step's ``step_timeout`` stand still
        while the call waits (an approver that takes its time is a wait for a decision
        too, but the run does not pause for it: the approver is there to answer).
        """
        tool = toolset.get(tool_name)
        if tool is None or not tool.requires_approval:
            return None
        desk, at = self._desk, StepAt(assign.run_id, assign.plan_version, assign.step.id)
        policy = toolset.approver

        async def wait(request: ApprovalRequest, /) -> ApprovalDecision:
            top = desk.top(at)
            step_id, index = at.step_id, call_index
            if top != at:  # a nested run's call: named by what it does (see _nested_calls)
                where = (at, self._worker, call_index)
                step_id, index = desk.nested_calls.name(top, where, request)
            expires = (
                None if self._timeout is None or policy is not None else desk.now() + self._timeout
            )
            request = msgspec.structs.replace(
                request,
                request_id=request_id_for(top, self._worker, step_id, index),
                run_id=top.run_id,
                worker=self._worker,
                plan_version=top.plan_version,
                step_id=top.step_id,
                call_index=call_index,
                expires_at=expires,
            )
            decided: Callable[[], Awaitable[ApprovalDecision]]
            judging = _told_judgement(desk, top.run_id, request.request_id)
            with desk.waiting(at), _deciding(progress):
                if policy is not None:
                    decided = functools.partial(ask_policy, desk, request, policy, judging=judging)
                else:
                    decided = functools.partial(
                        desk.wait, request, tool, at, progress, judging=judging
                    )
                decision = await self._decided(request, progress, decided)
            if progress is not None and progress.fenced(assign.plan_version):
                # Its plan ended while the call waited (a replan, say): the body never runs.
                call = ToolCallPart(id=request.call_id, name=tool_name, arguments=request.arguments)
                await held_back(progress, assign, (call,), None, toolset)
            return decision

        return wait

    async def _decided(
        self,
        request: ApprovalRequest,
        progress: StepProgress | None,
        decision_of: Callable[[], Awaitable[ApprovalDecision]],
    ) -> ApprovalDecision:
        """Wait for the decision (a human's on the desk, or the in-process approver's), in
        a ``regiment.approval`` span.

        Cut by its run's pause, the wait is not called off (the request stays pending
        for a resume): the span ends with no cancelled marker, and no decision.
        """
        started = time.monotonic()
        held: BaseException | None = None
        with self._telemetry.span(
            sc.SPAN_APPROVAL,
            {
                sc.GEN_AI_TOOL_NAME: request.tool_name,
                sc.REGIMENT_APPROVAL_REQUEST_ID: request.request_id,
                sc.REGIMENT_WORKER: self._worker,
            },
        ) as span:
            try:
                decision = await decision_of()
            except anyio.get_cancelled_exc_class() as exc:
                if progress is None or not progress.paused:
                    raise
                progress.awaiting = True  # its tool call's span says so too
                held = exc  # raised below, once the span has ended as a wait
            finally:  # how long it waited, a wait cut short (a pause, a cancel) too
                span.set_attribute(sc.REGIMENT_APPROVAL_WAIT, time.monotonic() - started)
            if held is None:
                span.set_attribute(sc.REGIMENT_APPROVAL_DECISION, decision_name(decision))
        if held is not None:
            raise held
        return decision


def _told_judgement(desk: ApprovalDesk, run_id: str, request_id: str) -> bool:
    """Whether the call being decided has ``tool_call`` guards that judge an edit: then
    they tell its run what they made of it (``EditJudged``), so the request's resolution
    says what ran. (A Ray replica's call is judged on the replica: its run is not told.)"""
    check = edit_check()
    if check is None:
        return False

    async def tell(verdict: ApprovalDecision) -> None:
        await desk.tell(run_id, EditJudged(request_id, verdict))

    check.tell = tell
    return True


@contextlib.contextmanager
def _deciding(progress: StepProgress | None) -> Iterator[None]:
    """The step's timeout stands still while its call waits for a decision."""
    if progress is None:
        yield
        return
    with progress.waiting_for_decision():
        yield
