"""Mid-step top-ups: a step whose share cannot pay for its next call asks its run
for more before it gives up.

A step's share is fixed when it is sent, but the run's budget is not all reserved
then (a step sent alone gets its even share of what the steps still to come will
need), and a sibling that reports gives back what it did not spend. A step whose
share runs short (its next model call's estimated input does not fit, its output
tokens or model calls are used up, it asks for more tool calls than it has left)
draws from that, at once and without waiting, under one fair rule:

* it may draw only what is neither spent nor reserved by a step in flight, less
  what the steps of the plan still to be sent would get as even shares of what
  is unspent (shared by them and the steps in flight); for tokens the synthesis
  counts as one more step still to come, and one model call per step still to be
  sent, and one for the synthesis, are kept back; of tokens, money and model calls,
  nothing is kept for the steps that wait on the step asking (they cannot start
  before it reports, nor at all once it ends the run short of them); tool calls are
  kept for them too (a step short of tool calls answers from what it has); nor is
  anything kept for the steps the model calls cannot send before it reports
  (``_sendable``: it holds most of them), which could not start before it reports either;
* it gets what its call needs, or an even part (between the steps in flight) of
  what it may draw if that is more, so a long loop does not ask before every call;
* a step short of model calls, tokens or money that cannot be topped up now waits
  (``grant_waiting``) while a sibling that is not itself waiting, nor queued for a
  runner its worker's busy runners hold (``queued``), holds a share: that sibling will report and give back what it did not spend, and the step
  asks again each time one does. The last such step never waits (it ends short, and
  gives back what it holds), so a run never waits on itself; nor does any while a call
  of the run waits for a decision (a human may take hours);
* a step that ran out ends its run, but its siblings in flight finish and may still
  draw on what it gave back, nothing kept for steps or a synthesis that will not come
  (``stop(drain=True)``).

A nested run (a step given to a ``TeamWorker``) draws from its own budget first,
then through the step it serves from the run above (whose rule applies there),
and its own limit grows by what it got there, never past its team's own budget.
A nested run's step that cannot be topped up, none of its siblings able to give back,
waits in the run above as the step that run serves; when none can give back there
either, the last sent gives way, its whole nested run with it, so that the first sent
finish (``_give_way``). A nested run's own calls (its planner's, critic's,
compressor's and synthesizer's, and their guards' judges: ``afford``) draw what they
lack through the step the run serves before the run gives up.

In-process steps hold their run's ``TopUps`` by reference (through the run's
channel), as they hold its ``StepFence``: the planner's ledger is only ever
touched synchronously, in the one event loop, so a top-up needs no lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Hashable
from typing import final

from regiment.hierarchy._afford import afford, budget_field
from regiment.hierarchy._budget import Budget, BudgetLedger
from regiment.hierarchy._call_need import Need, call_need, reply_room
from regiment.hierarchy._give_way import defers, given_up, hold_above, wait_marked, waits_at
from regiment.hierarchy._messages import StepAllowance
from regiment.hierarchy.events import BudgetToppedUp, Event

__all__ = ("Need", "TopUps", "afford", "call_need", "reply_room")

_log = logging.getLogger("regiment.run")

_TOKENS = ("tokens", "input_tokens", "output_tokens", "micro_usd")


def _none_unsent() -> int:
    return 0


def _none_after(key: Hashable) -> int:
    return 0


def _sendable(ledger: BudgetLedger, key: Hashable, caps: Collection[int]) -> int:
    """How many steps still to be sent could start before the step under ``key`` reports:
    while it is in flight a step is sent only with its whole model call cap (the least
    of ``caps``, each worker's), from the model calls no step holds or its siblings in
    flight may give back, one kept for the synthesis. Nothing is kept for the rest: they
    cannot start before it reports, nor at all once it ends the run short (as the steps
    that wait on it), so a step holding the run's model calls is not stopped on a limit
    it has barely spent."""
    calls = ledger.room("model_calls")
    if calls is None:
        return 1 << 62
    held = ledger.reserved.get(key)
    mine = 0 if held is None else held.model_calls or 0
    return max(0, calls[0] - mine - 1) // max(1, min(caps, default=1))


@final
class TopUps:
    """One run's top-ups for its steps in flight (see the module's docstring).

    Attributes:
        ledger: the run's ledger (set by its planner as the run starts).
        unsent: how many steps of the current plan are still to be sent.
        after: how many of those wait (directly or not) on the step under a key: they
            cannot start before it reports, nor at all if it runs out of budget.
        told: emits an event of the run (its book's ``emit``).
        above: a nested run's: the run above's top-ups and the key of the step served.
        own: a nested run's: its team's own budget, which a top-up never goes past.
        caps: each worker's model call cap (a step in flight beside others is sent
            with its whole cap): how many steps still to be sent could start.
    """

    __slots__ = (
        "above",
        "after",
        "caps",
        "deciding",
        "ending",
        "held_back",
        "ledger",
        "own",
        "refused",
        "run_id",
        "told",
        "unsent",
        "waiting",
    )

    def __init__(self) -> None:
        self.ledger: BudgetLedger | None = None
        self.run_id = ""
        self.unsent: Callable[[], int] = _none_unsent
        self.after: Callable[[Hashable], int] = _none_after
        self.told: Callable[[Event], None] | None = None
        self.above: tuple[TopUps, Hashable] | None = None
        self.own: Budget | None = None
        self.caps: Collection[int] = ()  # each worker's model call cap (``_sendable``)
        # Steps waiting in ``grant_waiting`` for a sibling to give back (key -> how many
        # wait under it: a nested run's steps wait under the step it serves: ``waits_at``).
        self.waiting: dict[Hashable, int] = {}
        # Steps queued for a runner of their worker that only a running step's end frees
        # (``queued``): they give nothing back before then (their runners may be waiters).
        self.held_back: set[Hashable] = set()
        self.refused: set[Hashable] = set()  # steps told to give way (``_give_way``)
        # The run's calls waiting for a decision (by request id): while one does, no step
        # waits for a top-up (a human may take hours; the run pauses once only they wait).
        self.deciding: Collection[str] = ()
        self.ending = False  # the run drains (``stop``): nothing is kept for later

    def wire(
        self,
        ledger: BudgetLedger,
        run_id: str,
        unsent: Callable[[], int],
        told: Callable[[Event], None],
        after: Callable[[Hashable], int] = _none_after,
    ) -> None:
        """Set by the run's planner as the run starts: its ledger, id, how many steps of
        its plan are still to be sent (``after``: of those, how many wait on a step), and
        how to emit an event of the run."""
        self.ledger, self.run_id, self.unsent, self.told = ledger, run_id, unsent, told
        self.after = after
        if self.above is not None and (up := self.above[0].ledger) is not None:
            ledger.root = up.root or up  # its waiters wake at any give-back of the tree

    def queued(self, key: Hashable, held: bool = True) -> None:
        """The step reserved under ``key`` waits for a runner of its worker that only a
        running step's end frees (``held``): steps waiting for a top-up ask again (it
        no longer counts as a sibling that will give back); or a runner took it."""
        if not held:
            self.held_back.discard(key)
        else:
            self.held_back.add(key)
            if (ledger := self.ledger) is not None:
                ledger.given_back_now()
        if self.above is not None:
            hold_above(self)

    def close(self) -> None:
        """The run has ended: no more top-ups, and let go of its ledger, book and
        dispatcher (held, they would make a cycle with the run's channel that only
        the garbage collector could free)."""
        self.stop()
        self.told = self.above = None
        self.deciding = ()
        self.held_back.clear()
        self.refused.clear()
        self.unsent, self.after = _none_unsent, _none_after

    def wake(self) -> None:
        """Steps waiting for a top-up (``grant_waiting``) ask again (a call of the run
        waits for a decision, or got one)."""
        if (ledger := self.ledger) is not None:
            ledger.given_back_now()

    def stop(self, drain: bool = False) -> None:
        """No more top-ups (the run's budget ran out, or the run ended): a step waiting
        for one (``grant_waiting``) is woken and told no. ``drain``: a step's share ran
        out, its siblings in flight finish and may draw all that is free (no step nor
        synthesis will follow them), as the step that ran out gives back."""
        if drain:
            self.unsent, self.after, self.ending = _none_unsent, _none_after, True
        if (ledger := self.ledger) is not None:
            ledger.given_back_now()
        if not drain:
            self.ledger = None

    async def grant_waiting(self, key: Hashable, need: Need, who: str = "") -> StepAllowance | None:
        """``grant``; while the run cannot spare it but a sibling that will give back
        without waiting on it holds a share (``givers``), wait for a step to give back
        and ask again.

        Why no run waits forever (the invariant): a step waits only while some sibling
        holds a share (has not reported), is not waiting itself and is not held back
        for a runner (``queued``: its worker's runners are all busy, maybe with
        waiters). Such a sibling is running, or on its way to a runner bound to take it
        (or, just sent, still to reach its worker: if it is then queued behind busy
        runners, ``queued`` wakes the waiters to look again). So it makes progress that
        depends on no waiter: it reports (its share is released, which wakes every
        waiter to ask again), or it comes here and may wait only while another such
        sibling exists, so the last of them never waits; a call of the run waiting for
        a decision makes none wait (``wake`` makes those that do ask again), and the
        run's end or its budget's wakes them (``stop``). The check and the wait are one
        step of the event loop (no ``await`` between), so no wake-up is missed. (A
        fan-out of nine steps on a worker running eight at once hung on 35% of its
        need: eight runners waited on the ninth step, queued behind them.)

        Across runs (``_give_way``): a nested run's step waits in the run above only
        when none of its own siblings may give back, and counts there as waiting under
        the step its run serves, so that step is no giver while the nested run waits on
        the run above. A step told to give way (``refused``) reports without waiting on
        anyone (its waiters are told no, its nested run's steps end at their next
        call), so the waiting step the last of them chose may wait for it. Every wake-up
        is the top run's ledger's (``BudgetLedger.root``): a give-back anywhere in the
        tree makes every waiter in it ask again."""
        while (allowance := None if defers(self) else self.grant(key, need, who)) is None:
            ledger = self.ledger
            if ledger is None or "tool_calls" in need:
                return None  # (a step short of tool calls answers from what it has)
            if (marks := waits_at(self, key)) is None:
                return None  # the last that could give back must not wait
            await wait_marked(ledger, marks)
        return allowance

    def grant(self, key: Hashable, need: Need, who: str = "") -> StepAllowance | None:
        """Top up the step reserved under ``key`` (``(version, step id, attempt)``) by
        what it ``need`` s; its new allowance, or ``None`` when the run cannot spare
        the least of every field it needs (the step then ends as it would have)."""
        ledger = self.ledger
        if ledger is None or key not in ledger.reserved or given_up(self, key):
            return None
        extra: dict[str, int] = {}
        for name, (least, wanted) in need.items():
            got = self._draw(ledger, key, name, least, wanted)
            if got < least:
                return None
            extra[name] = got
        allowance = ledger.grow(key, extra)
        if allowance is not None:
            self._tell(key, extra, allowance, who)
        return allowance

    def _draw(self, ledger: BudgetLedger, key: Hashable, name: str, least: int, wanted: int) -> int:
        """How much of field ``name`` the step under ``key`` gets: 0 if not even ``least``."""
        drawable = self._drawable(ledger, key, name)
        if drawable < least and self.above is not None:
            drawable += self.draw_above(ledger, name, least - drawable)
        if drawable < least:
            return 0
        running = max(1, len(ledger.reserved))
        return min(drawable, max(wanted, drawable // running))

    def _drawable(self, ledger: BudgetLedger, key: Hashable, name: str) -> int:
        room = ledger.room(name)
        if room is None:
            return 0
        unspent, free = room
        if self.ending:
            return free
        unsent = self.unsent()
        if name != "tool_calls":  # a step short of these ends the run: those that wait
            unsent -= self.after(key)  # on it would never start, so keep nothing for them
        if name == "model_calls":
            return max(0, free - unsent - 1)  # one each to start, one for the synthesis
        synthesis = 1 if name in _TOKENS else 0  # the synthesis' part of tokens
        # Each part is an even share of what is unspent, but parts are kept only for the
        # steps the model calls no step holds can still send (``_sendable``).
        later = min(unsent, _sendable(ledger, key, self.caps)) + synthesis
        if later == 0:
            return free
        even = unspent // (len(ledger.reserved) + unsent + synthesis)
        return max(0, free - later * even)

    def draw_above(self, ledger: BudgetLedger, name: str, short: int) -> int:
        """Draw ``short`` of ``name`` through the step this nested run serves; its
        own limit grows by what it got, within its team's own budget."""
        assert self.above is not None
        above, key = self.above
        limit, ceiling = (
            budget_field(ledger.budget, name),
            None if self.own is None else budget_field(self.own, name),
        )
        if limit is None:
            return 0
        if ceiling is not None:
            short = min(short, ceiling - limit)
        held = None if above.ledger is None else above.ledger.reserved.get(key)
        if short <= 0 or held is None:
            return 0
        grown = above.grant(key, {name: (short, short)}, "for the run it hands its step to")
        if grown is None:
            return 0
        got: int = getattr(grown, name) - getattr(held, name)
        if ceiling is not None:
            got = min(got, ceiling - limit)
        ledger.widen(name, got)
        return got

    def _tell(
        self, key: Hashable, extra: dict[str, int], allowance: StepAllowance, who: str
    ) -> None:
        version, step_id = (key[0], key[1]) if isinstance(key, tuple) else (0, str(key))
        given = ", ".join(f"{n} {name}" for name, n in extra.items())
        detail = f"step {step_id}: topped up by {given} from what the run had left"
        _log.info(
            "run %s: %s (%s)",
            self.run_id,
            detail,
            who or "its share ran short",
            extra={"run_id": self.run_id, "step_id": step_id},
        )
        if self.told is not None:
            granted = StepAllowance(**extra)
            self.told(
                BudgetToppedUp(
                    run_id=self.run_id,
                    plan_version=version,
                    step_id=step_id,
                    granted=granted,
                    allowance=allowance,
                    detail=detail,
                )
            )
