"""A run's pending approvals: what its steps wait for, and whether it must pause."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import assert_never, final

from regiment.hierarchy._approvals import decision_name
from regiment.hierarchy.events import ApprovalRequested, ApprovalResolved, Event
from regiment.hierarchy.run._changes import ApprovalAnswered, ApprovalAsked
from regiment.tools import ApprovalRequest, Deny, EditArguments

__all__ = ("RunApprovals",)


@final
class RunApprovals:
    """The requests of one run (and of the teams nested in it) still undecided."""

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id
        self.pending: dict[str, ApprovalRequest] = {}

    def apply(
        self, change: ApprovalAsked | ApprovalAnswered, emit: Callable[[Event], None]
    ) -> None:
        """Apply one approval change and emit its event."""
        match change:
            case ApprovalAsked(request=request):
                self.pending[request.request_id] = request
                emit(ApprovalRequested(run_id=self._run_id, request=request))
            case ApprovalAnswered(request=r, decision=decision, by=by, waited_s=waited):
                self.pending.pop(r.request_id, None)
                reason = decision.reason if isinstance(decision, Deny | EditArguments) else ""
                arguments = (
                    decision.arguments if isinstance(decision, EditArguments) else r.arguments
                )
                emit(
                    ApprovalResolved(
                        run_id=self._run_id,
                        request_id=r.request_id,
                        tool=r.tool_name,
                        worker=r.worker,
                        step_id=r.step_id,
                        decision=decision_name(decision),
                        decided_by=by,
                        reason=reason,
                        arguments=arguments,
                        waited_s=waited,
                    )
                )
            case _:
                assert_never(change)

    def stalled(
        self,
        inflight: Mapping[tuple[int, str, int], str],
        busy: Callable[[int, str], bool] = lambda version, step_id: False,
    ) -> bool:
        """Whether every step in flight waits for an approval (so nothing can go on);
        ``busy``: whether a step (one served by a nested run) has other work going on,
        though a call of it waits."""
        if not inflight or not self.pending:
            return False
        waiting = {(r.plan_version, r.step_id) for r in self.pending.values()}
        return all(
            (version, step_id) in waiting and not busy(version, step_id)
            for version, step_id, _ in inflight
        )
