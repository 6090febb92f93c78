"""A run's pending approvals: what its steps wait for, and whether it must pause."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import assert_never, final

import msgspec

from regiment.hierarchy._approvals import decision_name
from regiment.hierarchy.events import ApprovalRequested, ApprovalResolved, Event
from regiment.hierarchy.run._changes import ApprovalAnswered, ApprovalAsked, ApprovalJudged
from regiment.tools import ApprovalDecision, ApprovalRequest, Deny, EditArguments

__all__ = ("RunApprovals",)


@final
class RunApprovals:
    """The requests of one run (and of the teams nested in it) still undecided."""

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id
        self.pending: dict[str, ApprovalRequest] = {}
        # Resolutions of edits that the call's guards judge: held until they have (an
        # ``ApprovalJudged``), so the event says what ran; and verdicts that came first.
        self._held: dict[str, ApprovalResolved] = {}
        self._verdicts: dict[str, ApprovalDecision] = {}

    def apply(
        self,
        change: ApprovalAsked | ApprovalAnswered | ApprovalJudged,
        emit: Callable[[Event], None],
    ) -> None:
        """Apply one approval change and emit its event."""
        match change:
            case ApprovalAsked(request=request):
                self.pending[request.request_id] = request
                emit(ApprovalRequested(run_id=self._run_id, request=request))
            case ApprovalAnswered(request=r):
                self.pending.pop(r.request_id, None)
                resolved = self._resolved(change)
                if change.judging:
                    verdict = self._verdicts.pop(r.request_id, None)
                    if verdict is None:
                        self._held[r.request_id] = resolved
                        return
                    resolved = judged(resolved, verdict)
                emit(resolved)
            case ApprovalJudged(request_id=request_id, verdict=verdict):
                held = self._held.pop(request_id, None)
                if held is None:  # (it came before the decision it judged)
                    self._verdicts[request_id] = verdict
                else:
                    emit(judged(held, verdict))
            case _:
                assert_never(change)

    def unjudged(self, emit: Callable[[Event], None]) -> None:
        """The run ends (or pauses): resolutions still held for their guards' judgement
        are emitted as they are (a resume judges their edits again)."""
        held, self._held = self._held, {}
        self._verdicts.clear()
        for resolved in held.values():
            emit(msgspec.structs.replace(resolved, guarded="unjudged"))

    def _resolved(self, change: ApprovalAnswered) -> ApprovalResolved:
        r, decision = change.request, change.decision
        reason = decision.reason if isinstance(decision, Deny | EditArguments) else ""
        arguments = decision.arguments if isinstance(decision, EditArguments) else r.arguments
        return ApprovalResolved(
            run_id=self._run_id,
            request_id=r.request_id,
            tool=r.tool_name,
            worker=r.worker,
            step_id=r.step_id,
            decision=decision_name(decision),
            decided_by=change.by,
            reason=reason,
            arguments=arguments,
            waited_s=change.waited_s,
        )

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


def judged(resolved: ApprovalResolved, verdict: ApprovalDecision) -> ApprovalResolved:
    """``resolved`` (an edit's), saying what the call's guards made of the edit."""
    if isinstance(verdict, Deny):
        return msgspec.structs.replace(resolved, guarded="refused", guard_reason=verdict.reason)
    if isinstance(verdict, EditArguments) and verdict.arguments != resolved.arguments:
        return msgspec.structs.replace(
            resolved, guarded="rewritten", ran_arguments=dict(verdict.arguments)
        )
    return resolved  # let through as it was
