"""The approval desk's requests, by run, with a bound on what ended runs leave behind.

A request lives here while its run is live in this process. When the run ends, its
decided requests go (the run has what it needs, and a journal keeps the record), and
so do its undecided ones when the team has a journal (a resume reads them from it).
Without a journal, the undecided requests of the latest ``keep`` ended runs stay, so
``RunningTeam.pending_approvals()`` still lists a paused run's requests (and
``approve`` can say why it cannot go on); the run that ended first is forgotten past
that, so a long-lived team holds a bounded number of them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

import anyio

from regiment.errors import ApprovalError
from regiment.tools import Deny, EditArguments

if TYPE_CHECKING:
    from regiment.hierarchy._nested_waits import StepCalls
    from regiment.journal import Journal
    from regiment.tools import ApprovalDecision, ApprovalRequest, Tool

__all__ = (
    "KEEP_ENDED_RUNS",
    "Entries",
    "Pending",
    "asked_before",
    "decision_name",
    "describe",
    "journaled_decision",
    "request_id_for",
)

_log = logging.getLogger("regiment.run")

KEEP_ENDED_RUNS = 1_000  # ended runs whose undecided requests are kept (no journal)


@dataclass(slots=True)
class Pending:
    """One request on the desk and what became of it."""

    request: ApprovalRequest
    tool: Tool[..., object] | None
    decision: ApprovalDecision | None = None
    by: str = ""
    ready: anyio.Event | None = None  # set while a worker waits on it
    journaled: bool = False  # the decision is in the journal already
    started: float = 0.0  # when the call began to wait (monotonic)
    told: bool = False  # the decision reached the run's planner with ``settle``
    deciding: anyio.Event | None = None  # set while a decision is being recorded
    at: tuple[str, int, str] | None = None  # the step (maybe nested) that waits on it now
    calls: StepCalls | None = None  # that step's calls, while one waits on this request
    step: tuple[str, int, str] | None = None  # the step (maybe nested) that asked it
    cut: bool = False  # its step ended while a decision was being recorded: tell the run
    judging: bool = False  # the waiting call's guards judge an edit (see ``EditJudged``)


@final
class Entries:
    """The requests by id, and the ids of each top-level run's requests."""

    def __init__(self, keep: int = KEEP_ENDED_RUNS) -> None:
        self._keep = keep
        self._all: dict[str, Pending] = {}
        self._runs: dict[str, dict[str, None]] = {}  # run id -> its request ids, in order
        self._ended: dict[str, None] = {}  # ended runs with requests kept, oldest first

    def __len__(self) -> int:
        return len(self._all)

    def get(self, request_id: str) -> Pending | None:
        """The entry of ``request_id``, if the desk holds it."""
        return self._all.get(request_id)

    def add(self, entry: Pending) -> Pending:
        """Hold ``entry`` under its request's id and its run."""
        request = entry.request
        self._all[request.request_id] = entry
        self._runs.setdefault(request.run_id, {})[request.request_id] = None
        return entry

    def claim(self, request_id: str, decision: ApprovalDecision) -> ApprovalRequest:
        """Check a decision on a request held here, and mark it being decided (the
        ``deciding`` event, until ``unclaim`` or the decision is set); the request.

        Raises:
            ApprovalError: it is decided (or being decided) already, or edited
                arguments do not validate.
        """
        entry = self._all[request_id]  # the desk found it, and nothing awaited since
        request = entry.request
        if entry.decision is not None or entry.deciding is not None:
            by = f" by {entry.by}" if entry.by else ""  # no name given: none made up
            done = describe(entry.decision) if entry.decision else "being recorded"
            raise ApprovalError(
                f"approval request {request_id} ({request.tool_name} in run "
                f"{request.run_id}) was already decided{by}: {done}; a decision cannot "
                "be changed",
                kind="decided",
            )
        if isinstance(decision, EditArguments) and entry.tool is not None:
            problem = entry.tool.check_arguments(decision.arguments)
            if problem is not None:
                raise ApprovalError(
                    f"the edited arguments for tool {request.tool_name!r} do not validate: "
                    f"{problem}; request {request_id} stays pending, decide again"
                )
        entry.deciding = anyio.Event()
        return request

    def unclaim(self, request_id: str) -> None:
        """The claimed decision could not be recorded: the request is pending again."""
        entry = self._all.get(request_id)
        if entry is not None and entry.deciding is not None:
            entry.deciding.set()
            entry.deciding = None

    def withdraw(
        self, request_id: str, decision: Deny
    ) -> tuple[ApprovalDecision, str, bool] | None:
        """A pending request's step ended without it while its run goes on (a replan cut
        it): it can never apply, so it is decided ``decision`` (unless a decision came
        first: then that one). What it was decided, by whom, and whether the journal has
        it; ``None`` while a human's decision is being recorded."""
        entry = self._all.get(request_id)
        if entry is None:
            return decision, "", False
        if entry.deciding is not None:
            entry.cut = True  # the decision's ``settle`` tells the run
            return None
        if entry.decision is None:
            entry.decision = decision
            return decision, "", False
        return entry.decision, entry.by, entry.journaled

    def withdraw_step(
        self, run_id: str, step: tuple[str, int, str], decision: Deny
    ) -> list[Pending]:
        """``step`` (of a run nested in top-level run ``run_id``) ended without its pending
        requests while its run goes on: each is decided ``decision``; the ones so decided
        (one whose decision is being recorded is left to it, marked ``cut``)."""
        withdrawn: list[Pending] = []
        for request_id in self._runs.get(run_id, ()):
            entry = self._all.get(request_id)
            if entry is None or entry.step != step or entry.decision is not None:
                continue
            if entry.deciding is not None:
                entry.cut = True
                continue
            entry.decision = decision
            withdrawn.append(entry)
        return withdrawn

    def values(self) -> Iterator[Pending]:
        """Every entry, oldest first."""
        return iter(tuple(self._all.values()))

    def live_again(self, run_id: str) -> None:
        """``run_id`` runs again (a resume in this process): its requests are its own again."""
        self._ended.pop(run_id, None)

    def drop(self, request_id: str) -> None:
        """Forget one request (decided for a run that is not live here)."""
        entry = self._all.pop(request_id, None)
        if entry is not None:
            ids = self._runs.get(entry.request.run_id)
            if ids is not None:
                ids.pop(request_id, None)
                if not ids:
                    del self._runs[entry.request.run_id]
                    self._ended.pop(entry.request.run_id, None)

    def end_run(self, run_id: str, *, keep_undecided: bool) -> None:
        """``run_id`` ended: forget its requests but those being decided and, with
        ``keep_undecided``, those still undecided (for the latest ``keep`` ended runs)."""
        kept = self._forget(run_id, keep_undecided=keep_undecided)
        if not kept:
            return
        self._ended[run_id] = None
        while len(self._ended) > self._keep:
            oldest = next(iter(self._ended))
            del self._ended[oldest]
            self._forget(oldest, keep_undecided=False)

    def _forget(self, run_id: str, *, keep_undecided: bool) -> bool:
        """Drop ``run_id``'s requests but the ones to keep; whether any are kept."""
        ids = self._runs.pop(run_id, None) or {}
        kept: dict[str, None] = {}
        for request_id in ids:
            entry = self._all.get(request_id)
            if entry is None:
                continue
            if entry.deciding is not None or (keep_undecided and entry.decision is None):
                kept[request_id] = None
            else:
                del self._all[request_id]
        if kept:
            self._runs[run_id] = kept
        return bool(kept)


async def asked_before(
    journal: Journal | None, request: ApprovalRequest, grace: float
) -> tuple[bool, ApprovalDecision | None, str]:
    """``journaled_decision``, shielded from a pause's cancel for at most ``grace`` seconds;
    a journal that does not answer by then counts as 'not asked before'."""
    with anyio.move_on_after(grace, shield=True):
        return await journaled_decision(journal, request)
    _log.warning(
        "the journal did not answer within %g s whether approval request %s "
        "was asked before; it is taken as new",
        grace,
        request.request_id,
    )
    return False, None, ""


async def journaled_decision(
    journal: Journal | None, request: ApprovalRequest
) -> tuple[bool, ApprovalDecision | None, str]:
    """Whether a resumed run journaled ``request`` before, the decision taken since, and
    by whom (a look-up of this approval's records, not a read of the whole run)."""
    if journal is None:
        return False, None, ""
    from regiment.journal import patient_reads  # (a journaled run has loaded the room)

    with patient_reads():  # the run's own: it waits for a restarting server
        found = await journal.approval(request.run_id, request.request_id)
    if found is None:
        return False, None, ""
    if found.decision is None:
        return True, None, ""
    return True, found.decision.decision, found.decision.decided_by


def decision_name(decision: ApprovalDecision) -> str:
    """``approve``, ``deny`` or ``edit``."""
    match decision:
        case Deny():
            return "deny"
        case EditArguments():
            return "edit"
        case _:
            return "approve"


def describe(decision: ApprovalDecision) -> str:
    """What was decided, in words: ``approved``, ``denied (reason)``, ..."""
    match decision:
        case Deny(reason=reason):
            return f"denied ({reason})"
        case EditArguments():
            return "approved with edited arguments"
        case _:
            return "approved"


def request_id_for(top: tuple[str, int, str], worker: str, step_id: str, call_index: int) -> str:
    """A request id stable across resumes: the top-level step, the worker's path,
    its own step and the call's number in it (never a nested run's own id)."""
    run_id, plan_version, top_step = top
    key = "\x1f".join((run_id, str(plan_version), top_step, worker, step_id))
    import hashlib  # OpenSSL's hashes load on first use (issue #22: import time)

    digest = hashlib.sha256(f"{key}\x1f{call_index}".encode()).hexdigest()
    return f"apr-{digest[:20]}"
