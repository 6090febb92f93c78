"""Which steps wait for a top-up, on whom, and which gives way when none can give back
(``TopUps.grant_waiting``'s rule; see ``_top_up``).

A step waits in its run while a sibling there may give back without waiting on it
(``givers``). In a nested run, a step none of whose siblings may waits, if any, in the
run above under the step that run serves, as that step (``waits_at``): the whole nested
run waits there on a sibling of that step, which gives back into the run above.

When no sibling anywhere up the chain may give back, the last sent of the waiting steps
of the topmost run gives way (``refuse``): it tops up no more, and the nested run it
serves (at any depth) tops up no more either, its steps ending at their next call
(``given_up``); so it reports without waiting on anyone, and gives back what it did not
spend. It counts as one that may give back until then, so the others wait for it. And
what is given back goes to the first sent first (``defers``): a nested run's step does
not draw while a step sent before the one it serves waits in a run above.

Five nested teams sent at once, each run short at about the same time on 90% of what
they needed together, all ended ``budget_exhausted``: each gave up on its own, and the
first to give up stopped its run's top-ups for the rest.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from regiment.hierarchy._budget import BudgetLedger
    from regiment.hierarchy._top_up import TopUps

__all__ = ("defers", "given_up", "givers", "hold_above", "wait_marked", "waits_at")


def givers(top_ups: TopUps, ledger: BudgetLedger, key: Hashable) -> bool:
    """Whether a sibling of the step under ``key`` may give back without waiting on it:
    one that has not reported (it holds a share), is not waiting itself (or was told to
    give way: it reports, its waiters told no as they wake) and is not held back for a
    runner (it runs, or is on its way to a runner bound to take it). (Keys of steps that
    reported are let go of here.)"""
    reserved, waiting, held = ledger.reserved, top_ups.waiting, top_ups.held_back
    refused = top_ups.refused
    held.intersection_update(reserved)
    refused.intersection_update(reserved)
    return any(k != key and (k not in waiting or k in refused) and k not in held for k in reserved)


def hold_above(top_ups: TopUps) -> None:
    """A nested run whose steps in flight are all queued for runners (``TopUps.queued``)
    gives nothing back before a runner takes one: the step it serves is held back in the
    run above too, no giver there. (Runs nested in one team share its workers' runners:
    four nested runs of four steps on a worker running eight at once hung, the two whose
    steps ran waiting for the two whose steps were queued behind them.)"""
    assert top_ups.above is not None
    up, served = top_ups.above
    reserved = () if top_ups.ledger is None else top_ups.ledger.reserved
    stuck = bool(reserved) and all(k in top_ups.held_back for k in reserved)
    if stuck != (served in up.held_back):
        up.queued(served, stuck)


def waits_at(top_ups: TopUps, key: Hashable) -> list[tuple[TopUps, Hashable]] | None:
    """Where the step under ``key`` counts as waiting (``None``: it must not wait): its
    run, if a sibling there may give back (``givers``); else, in a nested run, the run
    above too under the step it serves, if a sibling there may (and so on up). No run's
    call may be waiting for a decision on the way (a human may take hours)."""
    marks: list[tuple[TopUps, Hashable]] = []
    at: TopUps | None = top_ups
    while at is not None:
        ledger = at.ledger
        if ledger is None or key not in ledger.reserved or at.deciding or key in at.refused:
            return None
        marks.append((at, key))
        if givers(at, ledger, key):
            return marks
        if at.above is None:  # the last that could give back: it, or a later one, gives way
            return marks if len(marks) > 1 and _refuse(at, ledger, key) else None
        at, key = at.above
    return None


async def wait_marked(ledger: BudgetLedger, marks: list[tuple[TopUps, Hashable]]) -> None:
    """Wait for a give-back anywhere in the tree of runs (``ledger.root``'s), counted as
    waiting where ``marks`` say meanwhile. The caller checked and marks in the same step
    of the event loop (no ``await`` between), so no wake-up is missed."""
    root = ledger.root or ledger
    if (given_back := root.given_back) is None:
        given_back = root.given_back = anyio.Event()
    for top_ups, k in marks:
        top_ups.waiting[k] = top_ups.waiting.get(k, 0) + 1
    try:
        await given_back.wait()
    finally:
        for top_ups, k in marks:
            if (n := top_ups.waiting.pop(k, 1) - 1) > 0:
                top_ups.waiting[k] = n


def _refuse(top_ups: TopUps, ledger: BudgetLedger, key: Hashable) -> bool:
    """The last sent of the step under ``key`` (through which a nested run's step asks)
    and the waiting steps gives way; whether that is another step (it reports without
    waiting on anyone: the one asking may wait for it)."""
    last = key
    for k in ledger.reserved:
        if k == key or k in top_ups.waiting:
            last = k
    top_ups.refused.add(last)
    ledger.given_back_now()  # its waiters look again: they end
    return last != key


def defers(top_ups: TopUps) -> bool:
    """Whether, in a run above this nested one, a step sent before the one it serves
    waits for a top-up: what is given back goes to the first sent first."""
    at, key = top_ups.above or (None, None)
    while at is not None:
        waiting, ledger = at.waiting, at.ledger
        if waiting and ledger is not None:
            for k in ledger.reserved:
                if k == key:
                    break
                if k in waiting and k not in at.refused:
                    return True
        at, key = at.above or (None, None)
    return False


def given_up(top_ups: TopUps, key: Hashable = None) -> bool:
    """Whether the step under ``key``, or the step a run above this nested one serves
    (at any depth), was told to give way."""
    at: TopUps | None = top_ups
    while at is not None:
        if key in at.refused:
            return True
        at, key = at.above or (None, None)
    return False
