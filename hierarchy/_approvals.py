"""Where a worker's tool call waits for a human: a started team's approval desk.

One desk per started team, shared with every team nested in it, so a request
from a worker of a sub-team surfaces at the top-level run. A call that needs
approval (and that no ``Toolset(approver=...)`` answers at once) becomes a
pending :class:`~regiment.tools.ApprovalRequest` here; the run's planner is told
(:class:`ApprovalNoticed`) and journals it, and the call waits until
``RunningTeam.approve`` decides, the request expires, or the run pauses (its
steps are cancelled; the request stays pending for a later resume).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, final

import anyio
import msgspec

from regiment.errors import ActorStopped
from regiment.hierarchy._approval_entries import (
    Entries,
    Pending,
    asked_before,
    decision_name,
    journaled_decision,
    request_id_for,
)
from regiment.hierarchy._clock import RunClock
from regiment.hierarchy._desk_notices import (
    ApprovalNoticed,
    ApprovalSettled,
    DeskNotice,
    EditJudged,
    NestedStalled,
    Notice,
    StepAt,
)
from regiment.hierarchy._nested_calls import NestedCalls
from regiment.hierarchy._nested_waits import InFlight, NestedWaits, StepCalls
from regiment.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    Deny,
    EditArguments,
    ask_approver,
)

if TYPE_CHECKING:
    from regiment.journal import Journal
    from regiment.tools import Tool

# How long recording a request (the journal read, the notice to its run) may hold off
# a cancel: as long as a stopped run's wind-down waits for its steps.
_RECORD_GRACE = 5.0

__all__ = (
    "ApprovalDesk",
    "ApprovalNoticed",
    "ApprovalSettled",
    "DeskNotice",
    "EditJudged",
    "NestedStalled",
    "Notice",
    "StepAt",
    "ask_policy",
    "decision_name",
    "request_id_for",
)


_EXPIRED = Deny(reason="no decision before the request expired")


@final
class ApprovalDesk:
    """The pending approval requests of a started team and every team nested in it."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._planners: dict[str, Callable[[Notice], Awaitable[None]]] = {}
        self._parents: dict[str, StepAt] = {}
        self._entries = Entries()  # live runs' requests, and a bounded few of ended ones
        self._pausing: set[str] = set()  # top-level runs winding down to a pause
        self.journal: Journal | None = None  # where a paused run's decisions are
        self.clocks: dict[str, RunClock] = {}  # the wall clocks of the runs in progress
        self.nested_calls = NestedCalls()  # how nested runs' calls are named in request ids
        self.nested_waits = NestedWaits()  # which steps wait; what nested runs have in flight

    # -- runs ----------------------------------------------------------------

    def open_run(self, run_id: str, notify: Callable[[Notice], Awaitable[None]]) -> None:
        """A top-level run started: its planner hears of its requests through ``notify``."""
        self._planners[run_id] = notify
        self._pausing.discard(run_id)
        self._entries.live_again(run_id)

    def link(self, run_id: str, parent: StepAt, inflight: InFlight) -> None:
        """A nested run started for ``parent``'s step: its requests belong to the top run
        (``inflight``: its steps in flight, to tell whether it has only waits left)."""
        if parent.run_id in self._planners:  # the top-level step (re)starts its nested run
            self.nested_calls.restart(parent)
        self._parents[run_id] = parent
        self.nested_waits.link(run_id, parent, inflight)

    def close_run(self, run_id: str, *, paused: bool = False) -> None:
        """The run ended: its decided requests are forgotten, and so are its undecided
        ones unless it ``paused`` with no journal to keep them for a resume (then a
        bounded few stay listed); a run that ended otherwise (cancelled) takes none."""
        top = self._planners.pop(run_id, None) is not None
        self._pausing.discard(run_id)
        self._parents.pop(run_id, None)
        self.nested_waits.unlink(run_id)
        self.clocks.pop(run_id, None)
        if top:
            self._entries.end_run(run_id, keep_undecided=paused and self.journal is None)
            self.nested_calls.forget(run_id)

    def top(self, at: StepAt) -> StepAt:
        """The top-level run's step that ``at`` (a step of a nested run, maybe) serves."""
        while (parent := self._parents.get(at.run_id)) is not None:
            at = parent
        return at

    @contextlib.contextmanager
    def waiting(self, at: StepAt) -> Iterator[None]:
        """Hold the wall clocks of ``at``'s run and of every run above it while a call of
        it waits for a human's decision (see :class:`~regiment.hierarchy._clock.RunClock`)."""
        with contextlib.ExitStack() as held:
            run: StepAt | None = at
            while run is not None:
                clock = self.clocks.get(run.run_id)
                if clock is not None:
                    held.enter_context(clock.held())
                run = self._parents.get(run.run_id)
            yield

    def now(self) -> float:
        """The desk's clock (Unix time), which expiry times are on."""
        return self._clock()

    def is_live(self, run_id: str) -> bool:
        """Whether the top-level run is in progress in this process (and not pausing)."""
        return run_id in self._planners and run_id not in self._pausing

    def pausing(self, run_id: str) -> None:
        """The run winds down to a pause: a decision now wakes no call (the pause would
        cut its body halfway), it is kept for the resume."""
        self._pausing.add(run_id)

    # -- requests --------------------------------------------------------------

    async def wait(
        self,
        request: ApprovalRequest,
        tool: Tool[..., object] | None,
        at: StepAt | None = None,
        calls: StepCalls | None = None,
        *,
        judging: bool = False,
    ) -> ApprovalDecision:
        """Register ``request`` (once), tell its run, and wait for the decision (``at``:
        the step, maybe of a nested run, whose call waits; ``calls``: that step's calls;
        ``judging``: the call's guards judge an edit next, and tell its run so).

        An expired request is a denial. Cancelled (the run paused or stopped),
        the request stays pending.
        """
        entry = self._entries.get(request.request_id)
        journaled = False
        if entry is None:
            entry = self._entries.add(Pending(request, tool, step=at))
            # Journaled and told whole (shielded, for a bounded time): a pause that lands
            # meanwhile, because another call of the run asked first, must still find
            # this request pending.
            journaled, decision, by = await asked_before(self.journal, request, _RECORD_GRACE)
            if decision is not None and entry.decision is None:  # (``approve`` may be quicker)
                entry.decision, entry.by, entry.journaled = decision, by, True
        entry.judging = judging
        if entry.decision is not None:  # decided while the run was paused
            if not entry.told:  # (``settle`` may have told it already)
                await self.tell(request.run_id, _settled(entry, entry.decision, 0.0))
            return entry.decision
        started = entry.started = time.monotonic()
        unasked: bool | None = journaled  # the run was not told of the request (yet)
        if not self._expired(entry):
            if at is not None:  # counted before its run hears of it
                self._hold(entry, at, calls)
            with anyio.move_on_after(_RECORD_GRACE, shield=True):
                await self.tell(request.run_id, ApprovalNoticed(entry.request, journaled))
            unasked = None
            ready = entry.ready = anyio.Event()
            if _decided(entry):  # while the run was being told (mypy: an await came between)
                ready.set()
            try:
                expires = request.expires_at
                with anyio.move_on_after(math.inf if expires is None else expires - self._clock()):
                    await ready.wait()
                if entry.decision is None and entry.deciding is not None:
                    await entry.deciding.wait()  # a decision being recorded wins over expiry
            finally:
                entry.ready = None
                self._unhold(entry, waking=-1 if entry.told else 0)
        if entry.told:  # ``settle`` told the run's planner already
            return entry.decision or Deny(reason="no decision")
        if entry.decision is None:
            entry.decision, entry.by = _EXPIRED, "timeout"
        settled = _settled(entry, entry.decision, time.monotonic() - started)
        if unasked is not None:  # it expired before the run heard of it
            settled = msgspec.structs.replace(settled, unasked=unasked)
        await self.tell(request.run_id, settled)
        return entry.decision

    def get(self, request_id: str) -> ApprovalRequest | None:
        """A request this desk holds, decided or not."""
        entry = self._entries.get(request_id)
        return None if entry is None else entry.request

    def claim(self, request_id: str, decision: ApprovalDecision) -> bool:
        """Check a decision on a request this desk holds, and hold the request while the
        decision is recorded (``settle`` or ``unclaim`` next); whether its run is live here
        (``ApprovalError``, see ``Entries.claim``, if the decision cannot be taken)."""
        return self.is_live(self._entries.claim(request_id, decision).run_id)

    def unclaim(self, request_id: str) -> None:
        """The claimed decision could not be recorded: the request is pending again."""
        self._entries.unclaim(request_id)

    async def settle(
        self, request_id: str, decision: ApprovalDecision, by: str, *, journaled: bool
    ) -> None:
        """Record a claimed decision (``journaled``: the journal has it): a waiting call
        goes on, and its run's planner hears of it at once, before any later news."""
        entry = self._entries.get(request_id)
        if entry is None:
            return  # its run ended meanwhile, and the journal (if any) has the decision
        entry.decision, entry.by, entry.journaled = decision, by, journaled
        if entry.deciding is not None:
            entry.deciding.set()
            entry.deciding = None
        run_id = entry.request.run_id
        if run_id not in self._planners:  # its run has paused: a resume applies it
            if entry.ready is None:
                self._entries.drop(request_id)  # (from the journal: this desk needs it no more)
            return
        # It pauses: the call wakes no more, a resume applies it. Or its step was cut (a
        # replan) while the decision was recorded: no call will come to tell the run.
        if run_id in self._pausing or (entry.cut and entry.ready is None):
            entry.told = entry.ready is None  # (one cut already tells nothing more)
            await self.tell(run_id, ApprovalSettled(entry.request, decision, by, 0.0, journaled))
            return
        if entry.ready is None:  # not waiting yet: it finds the decision, and tells its run
            return
        entry.told = True
        self._unhold(entry, waking=1)  # before its run hears of the decision
        entry.ready.set()
        await self.tell(run_id, _settled(entry, decision, time.monotonic() - entry.started))

    def withdraw(
        self, request_id: str, decision: Deny
    ) -> tuple[ApprovalDecision, str, bool] | None:
        """See ``Entries.withdraw``: a request whose step ended while its run goes on."""
        return self._entries.withdraw(request_id, decision)

    async def withdraw_step(self, at: StepAt, decision: Deny) -> None:
        """``at``, a step of a nested run, ended while calls of it wait for decisions, and
        its run goes on (its replan cut the step): those requests can never apply, so they
        are decided ``decision`` at once, and the top-level run records it."""
        run_id = self.top(at).run_id
        for entry in self._entries.withdraw_step(run_id, at, decision):
            await self.tell(run_id, ApprovalSettled(entry.request, decision, "", 0.0))

    def pending(self, run_id: str | None = None) -> tuple[ApprovalRequest, ...]:
        """Undecided requests (of one top-level run), oldest first."""
        return tuple(
            e.request
            for e in self._entries.values()
            if e.decision is None and run_id in (None, e.request.run_id)
        )

    def _hold(self, entry: Pending, at: StepAt, calls: StepCalls | None) -> None:
        """Count ``entry``'s call as waiting in ``at``'s step (``calls``: the step's)."""
        entry.at, entry.calls = at, calls
        self.nested_waits.hold(at, calls)
        if calls is not None and calls.recheck is None:
            calls.recheck = functools.partial(self.recheck, at)

    def _unhold(self, entry: Pending, waking: int = 0) -> None:
        if entry.at is not None:  # ``waking``: +1 as ``settle`` wakes the call (its step is
            self.nested_waits.release(entry.at)  # not just waiting), -1 once it works
            entry.at = None
        if waking and entry.calls is not None:
            entry.calls.waking += waking
        if entry.ready is None:
            entry.calls = None

    async def recheck(self, at: StepAt) -> None:
        """A step of ``at``'s run ended, or a call of it stopped working while others of it
        wait for decisions: if only waits are left in the run (nested, or the step's own),
        its top-level run hears so (and pauses if nothing else of it goes on either)."""
        if at.run_id in self._planners:
            await self.tell(at.run_id, NestedStalled(at.run_id))
        elif self.nested_waits.stalled(at.run_id):
            await self.tell(self.top(at).run_id, NestedStalled(at.run_id))

    def _expired(self, entry: Pending) -> bool:
        expires = entry.request.expires_at
        return expires is not None and self._clock() >= expires

    async def tell(self, run_id: str, notice: Notice) -> None:
        """Tell top-level run ``run_id``'s planner (if the run is in progress here)."""
        notify = self._planners.get(run_id)
        if notify is not None:
            with contextlib.suppress(ActorStopped):  # the run has just ended
                await notify(notice)


async def ask_policy(
    desk: ApprovalDesk, request: ApprovalRequest, policy: Approver, *, judging: bool = False
) -> ApprovalDecision:
    """Let ``policy`` (an in-process approver) decide ``request`` at once.

    A request of a resumed run that was journaled before the run paused is settled
    like a human's: a decision taken meanwhile (``regiment approve``) is applied and
    the approver not asked; otherwise the approver's decision is journaled by the run
    (``judging``: the call's guards judge an edit next, see ``ApprovalDesk.wait``).
    """
    if desk.journal is None:
        return await ask_approver(policy, request)
    asked, decision, by = await journaled_decision(desk.journal, request)
    if decision is not None:
        edit = judging and isinstance(decision, EditArguments)
        await desk.tell(request.run_id, ApprovalSettled(request, decision, by, 0.0, True, edit))
        return decision
    started = time.monotonic()
    decision = await ask_approver(policy, request)
    if asked:  # still pending in the journal: the run records how it was decided
        waited = time.monotonic() - started
        edit = judging and isinstance(decision, EditArguments)
        settled = ApprovalSettled(request, decision, "approver", waited, False, edit)
        await desk.tell(request.run_id, settled)
    return decision


def _decided(entry: Pending) -> bool:
    return entry.decision is not None


def _settled(entry: Pending, decision: ApprovalDecision, waited: float) -> ApprovalSettled:
    """What the run hears of ``entry``'s decision as its call goes on with it."""
    judging = entry.judging and isinstance(decision, EditArguments)
    return ApprovalSettled(entry.request, decision, entry.by, waited, entry.journaled, judging)
