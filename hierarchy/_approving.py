"""Deciding approval requests: in this process's desk, or in the journal.

A request of a run that is live here is decided on the team's desk, and the
waiting call goes on at once (the run's planner journals the decision). A
request of a run that has paused (here, or in another process that may have
exited) is decided in the journal: an :class:`~regiment.journal.ApprovalDecided`
appended under the run's lease, which a resume of the run applies.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import TYPE_CHECKING

import anyio
import msgspec

from regiment._text import clipped
from regiment.errors import AlreadyFinished, ApprovalError, LeaseHeld
from regiment.hierarchy._approvals import ApprovalDesk, decision_name
from regiment.hierarchy._cancelling import cancel_paused
from regiment.hierarchy.run._brief_holds import BriefHold
from regiment.hierarchy.run._channel import RunChannel
from regiment.hierarchy.run._journaling import LEASE_TTL, RunJournal, owner_name
from regiment.hierarchy.workers._team_worker import TeamWorker
from regiment.journal import (
    ApprovalDecided,
    ApprovalRequested,
    Journal,
    Lease,
    find_approval,
)
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Deny,
    EditArguments,
    Tool,
)

if TYPE_CHECKING:
    from regiment.hierarchy._team import Team
    from regiment.hierarchy.events import RunFailed

__all__ = (
    "DecidesApprovals",
    "decide",
    "decide_in_journal",
    "find_tool",
    "journaled_request",
    "pending",
    "record_decision",
)


class DecidesApprovals:
    """``RunningTeam``'s approval methods (mixed in; ``RunningTeam`` gives the attributes)."""

    team: Team
    journal: Journal | None
    _desk: ApprovalDesk
    _channels: dict[str, RunChannel]

    async def approve(
        self,
        request_id: str,
        decision: ApprovalDecision,
        *,
        by: str | None = None,
        run_id: str | None = None,
    ) -> ApprovalRequest:
        """Decide a pending approval request; a live run goes on with it at once.

        ``Approve()`` runs the call once as asked; ``EditArguments(arguments)`` with
        those arguments (validated first); ``Deny(reason)`` gives the worker the tool
        error ``denied: <reason>``. A paused run's decision needs the team's journal:
        it is journaled there, and resuming the run applies it.

        Args:
            request_id: the request's ``request_id``.
            decision: what to do with the call.
            by: who decided, for the record (``ApprovalResolved.decided_by``).
            run_id: the request's run, if known (spares a search of the journal).

        Raises:
            ApprovalError: the request is unknown or decided already, edited
                arguments do not validate or a denial has no reason (it stays
                pending), or its run has paused and the team has no journal.
            LeaseHeld: the run is live in another process; decide there.
        """
        desk, journal, by = self._desk, self.journal, by or ""
        return await decide(
            desk, journal, self.team, request_id, decision, by, run_id=run_id, runs=self._live
        )

    def _live(self, run_id: str) -> RunChannel | None:
        """The channel of run ``run_id``, if it is in progress here."""
        return self._channels.get(run_id)

    async def cancel_paused(self, run_id: str, *, reason: str = "") -> RunFailed | None:
        """Cancel a run that paused for approvals: it ends ``cancelled`` (journaled so: it
        is not resumed), and its pending requests are withdrawn (a decision on one is
        refused: its run was cancelled). A live run is cancelled by cancelling its caller
        (``run``, ``stream``) or, in a service, ``POST /runs/{id}/cancel``. A run stalled
        mid-work (its process died, no pause) is ended so too, from its journal alone:
        nothing runs again, no model is asked; its ``RunFailed`` counts what a resume would.

        Args:
            run_id: the paused run.
            reason: why, for the record (its ``RunFailed`` message ends with it).

        Returns:
            The run's last event (``RunFailed``, ``error_type`` ``"RunCancelled"``, with
            what it got to by its pause); ``None`` if it is not paused (live here or in
            another process, or ended), when nothing changed.

        Raises:
            UnknownRun: the team's journal has no such run.
            LeaseHeld: a run stalled mid-work that another process took up meanwhile.
        """
        if self._live(run_id) is not None:
            return None
        return await cancel_paused(self._desk, self.journal, run_id, reason)

    async def pending_approvals(self, run_id: str | None = None) -> tuple[ApprovalRequest, ...]:
        """Undecided requests, of one run or of all: the live ones here, then the journal's."""
        return await pending(self._desk, self.journal, run_id)


async def decide(
    desk: ApprovalDesk,
    journal: Journal | None,
    team: Team,
    request_id: str,
    decision: ApprovalDecision,
    by: str,
    *,
    run_id: str | None = None,
    runs: Callable[[str], RunChannel | None] = lambda run_id: None,
) -> ApprovalRequest:
    """Decide ``request_id``; the request it decided (``runs``: the channel of a run
    live in this process, by run id).

    Raises:
        ApprovalError: no such request, it is decided or expired already, edited
            arguments do not validate (it stays pending), or its run has paused
            and there is no journal to hold the decision.
        LeaseHeld: the run is live in another process; decide there.
    """
    _check_decision(request_id, decision, by)
    request = desk.get(request_id)
    if request is not None:
        channel = runs(request.run_id)
        if channel is not None and channel.fence.cancelled():  # it winds down, no call wakes
            raise _ended(request, "cancelled")
        live = desk.claim(request_id, decision)  # held until settled: one decision only
        try:
            if not live and journal is None:
                raise ApprovalError(
                    f"run {request.run_id} has paused and this team has no journal to keep "
                    "the decision for its resume; start the team with journal=... "
                    "(a file or a postgresql:// URL) so paused runs can be resumed",
                    kind="no_journal",
                )
            # Journaled at once, whatever the run does next: if it pauses at this moment,
            # another process's resume finds the decision.
            if journal is not None:
                live_journal = None if channel is None else channel.journal
                await _record_now(journal, live_journal, request, decision, by)
        except BaseException:
            desk.unclaim(request_id)
            raise
        await desk.settle(request_id, decision, by, journaled=journal is not None)
        return request
    if journal is None:
        raise _unknown(request_id, "this team's live runs")
    return await decide_in_journal(journal, request_id, decision, by, run_id=run_id, team=team)


async def _record_now(
    journal: Journal,
    live: RunJournal | None,
    request: ApprovalRequest,
    decision: ApprovalDecision,
    by: str,
) -> None:
    """Append the decision durably: under the lease of its run if the run is live here
    (``live``: its run journal), else under a lease of its own."""
    record = ApprovalDecided(
        run_id=request.run_id, approval_id=request.request_id, decision=decision, decided_by=by
    )
    if live is not None and live.ended is not None:  # it ends (cancelled, say) without it
        raise _ended(request, live.ended)
    if live is None or not await live.decided(record):
        await record_decision(journal, request, decision, by)


async def decide_in_journal(
    journal: Journal,
    request_id: str,
    decision: ApprovalDecision,
    by: str,
    *,
    run_id: str | None = None,
    team: Team | None = None,
) -> ApprovalRequest:
    """Decide a journaled request of a paused run (``team``: to validate edited arguments).

    Raises:
        ApprovalError: no such request, it is decided already, its run has ended
            (cancelled, say) without it, or edited arguments do not validate against
            ``team``'s tool (it stays pending).
        LeaseHeld: the run is live in another process; decide there.
    """
    _check_decision(request_id, decision, by)
    requested, decided = await journaled_request(journal, request_id, run_id)
    if requested is None:
        raise _unknown(request_id, f"journal {journal.where}")
    request = requested.request
    if decided is not None:
        raise await _already_decided(journal, request, decided)
    ended = (await journal.get_run(request.run_id)).status
    if ended in _ENDED:
        raise _ended(request, ended)
    if team is not None:
        _check_edit(team, request, decision)
    await record_decision(journal, request, decision, by)
    return request


_ENDED = frozenset(("completed", "partial", "failed", "cancelled"))
"""A journaled run's statuses once it has finished: it takes no decision any more."""


def _ended(request: ApprovalRequest, status: str) -> ApprovalError:
    """The refusal of a decision on a request whose run has ended without it."""
    return ApprovalError(
        f"approval request {request.request_id} ({request.tool_name}) was never decided and "
        f"its run {request.run_id} has ended ({status}): a decision would change nothing; "
        "start a new run to do the call",
        kind="ended",
    )


async def pending(
    desk: ApprovalDesk, journal: Journal | None, run_id: str | None
) -> tuple[ApprovalRequest, ...]:
    """Undecided requests (of one run): the desk's, then the journal's others."""
    found = {r.request_id: r for r in desk.pending(run_id)}
    if journal is not None:
        for record in await journal.pending_approvals(run_id):
            found.setdefault(record.approval_id, record.request)
    return tuple(found.values())


async def journaled_request(
    journal: Journal, request_id: str, run_id: str | None
) -> tuple[ApprovalRequested | None, ApprovalDecided | None]:
    """The journaled request ``request_id`` and its decision, if any (``None``s if unknown)."""
    if run_id is None:  # in whichever run holds it, an old one's too
        found = await find_approval(journal, request_id)
    else:
        found = await journal.approval(run_id, request_id)
    return (None, None) if found is None else (found.request, found.decision)


async def record_decision(
    journal: Journal, request: ApprovalRequest, decision: ApprovalDecision, by: str
) -> None:
    """Append the decision durably under the run's lease, then let the run go again.

    Two deciders at once (two services sharing the journal, two requests to one) both
    find the request pending before either holds the lease: the one that gets the lease
    second looks again under it and is refused, so a request gets one decision.

    Raises:
        ApprovalError: another decision was recorded first.
        LeaseHeld: the run is live in another process.
    """
    with BriefHold(request.run_id, "having an approval decision recorded"):
        lease = await _decision_lease(journal, request)
        try:
            found = await journal.approval(request.run_id, request.request_id)
            if found is not None and found.decision is not None:
                raise await _already_decided(journal, request, found.decision)
            record = ApprovalDecided(
                run_id=request.run_id,
                approval_id=request.request_id,
                decision=decision,
                decided_by=by,
            )
            await journal.append(lease, record, durable=True)
        finally:
            await journal.release(lease)


_DECISION_TRIES = 20  # times 50 ms: another decider holds the lease for one write, not a second


async def _decision_lease(journal: Journal, request: ApprovalRequest) -> Lease:
    """The run's lease; one held by another decider is waited out (a live run's is not)."""
    for attempt in range(_DECISION_TRIES):
        try:
            return await journal.acquire(request.run_id, owner=owner_name(), ttl=LEASE_TTL)
        except AlreadyFinished as exc:  # it ended (cancelled, say) as this decision came
            raise _ended(request, exc.status) from None
        except LeaseHeld:
            found = await journal.approval(request.run_id, request.request_id)
            if found is not None and found.decision is not None:
                raise await _already_decided(journal, request, found.decision) from None
            if attempt == _DECISION_TRIES - 1:
                raise
        await anyio.sleep(0.05)
    raise AssertionError("unreachable")  # (the last attempt returned or raised)


async def _already_decided(
    journal: Journal, request: ApprovalRequest, decided: ApprovalDecided
) -> ApprovalError:
    """The refusal of a second decision: what the first one was, who took it (when a
    name was given) and when the journal recorded it."""
    what = decision_name(decided.decision)
    if isinstance(decided.decision, Deny):  # (a withdrawn request's says why)
        what = f"{what}: {decided.decision.reason}"
    when = ""
    for entry in await journal.read(request.run_id):  # only on this refusal: a read is fine
        if entry.record == decided:
            when = f" at {entry.recorded_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    who = f" by {decided.decided_by}" if decided.decided_by else ""
    return ApprovalError(
        f"approval request {request.request_id} ({request.tool_name} in run {request.run_id}) "
        f"was already decided{who} ({what}){when}; a decision cannot be changed",
        kind="decided",
    )


def find_tool(team: Team, worker: str, tool_name: str) -> Tool[..., object] | None:
    """The tool a request names, found along its worker path (``team/worker``, nested deeper)."""
    parts = worker.split("/")
    while len(parts) >= 2 and parts[0] == team.name:
        found = next((w for w in team.workers if w.name == parts[1]), None)
        if isinstance(found, TeamWorker):
            team, parts = found.team, parts[2:]
            continue
        return None if found is None else found.toolset.get(tool_name)
    return None


def _check_edit(team: Team, request: ApprovalRequest, decision: ApprovalDecision) -> None:
    if not isinstance(decision, EditArguments):
        return
    tool = find_tool(team, request.worker, request.tool_name)
    problem = None if tool is None else tool.check_arguments(decision.arguments)
    if problem is not None:
        raise ApprovalError(
            f"the edited arguments for tool {request.tool_name!r} do not validate: {problem}; "
            f"request {request.request_id} stays pending, decide again"
        )


def _check_decision(request_id: str, decision: ApprovalDecision, by: str) -> None:
    """Refuse, before anything is recorded, a decision that is not one of the three (a
    string ``"approve"``, say), one whose fields have other types than declared (a
    ``Deny(reason=None)``, ``EditArguments(arguments="...")``), or a ``by`` that is not
    text: it was journaled as it was, and its run's journal could no longer be read
    (every resume and every later decision failed with a ``JournalError``)."""
    stays = f"request {request_id} stays pending, decide again"
    given: object = decision  # what a caller passed, whatever its annotation says
    if not isinstance(given, Approve | Deny | EditArguments):
        shown = clipped(repr(decision), 80)
        raise ApprovalError(
            f"the decision is the {type(decision).__name__} {shown}, not a decision: pass "
            f"Approve(), Deny(reason=...) or EditArguments(arguments={{...}}); {stays}"
        )
    who: object = by
    if not isinstance(who, str):
        raise ApprovalError(f"by= is the {type(who).__name__} {who!r}, not text; {stays}")
    try:
        msgspec.json.decode(msgspec.json.encode(decision), type=ApprovalDecision)
    except (TypeError, ValueError) as exc:  # msgspec's EncodeError and ValidationError too
        raise ApprovalError(
            f"{type(decision).__name__} does not hold what it declares "
            f"({clipped(str(exc), 200)}); {stays}"
        ) from exc
    if isinstance(decision, Deny) and not decision.reason.strip():
        raise ApprovalError(  # the worker's model would be told only `denied: `
            "a denial needs a reason: the worker's model is told `denied: <reason>` "
            "(Deny(reason=...), `regiment approve --deny REASON`, the service's "
            f'"reason"); {stays}'
        )


def _unknown(request_id: str, where: str) -> ApprovalError:
    return ApprovalError(
        f"no approval request {request_id!r} in {where}; `regiment approvals` "
        "(or RunningTeam.pending_approvals()) lists the pending ones",
        kind="unknown",
    )
