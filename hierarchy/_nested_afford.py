"""A nested run's own model call (its planner's, critic's, compressor's, synthesizer's)
that its budget cannot pay for, even with what it may draw through the step it serves,
waits for the run above to give back, as its steps' top-ups do (``_give_way``).

It drew at once or not at all: under a tight budget shared with siblings in flight, a
nested run's synthesis failed short (its step ``budget_exhausted``) while a sibling of
the step it serves was about to report and give back more than it lacked. It now waits
while such a sibling (not waiting itself, not held back for a runner, not told to give
way) holds a share in a run above, counted there as waiting under the step the nested
run serves; it asks again at each give-back in the tree, and gives up (the run ends on
the limit, as before) once no such sibling is left, or a call of a run on the way waits
for a decision. It waits in the call's task, not the planner's, which goes on reading
its messages; the call's scope cuts the wait as it cuts the call.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from regiment.errors import BudgetExceeded
from regiment.hierarchy._afford import afford
from regiment.hierarchy._give_way import givers, wait_marked

if TYPE_CHECKING:
    from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
    from regiment.hierarchy._top_up import TopUps

__all__ = ("Unaffordable", "afforded", "may_wait", "waited")


class Unaffordable(BudgetExceeded):
    """A nested run's call its budget could not pay for after waiting: the run ends on
    ``unpaid`` as on a call refused at once (``partial``, or ``BudgetExceeded``)."""

    def __init__(self, message: str, unpaid: BudgetLimit) -> None:
        super().__init__(message, limit=unpaid)
        self.unpaid: BudgetLimit = unpaid


def _marks(top_ups: TopUps | None) -> list[tuple[TopUps, Hashable]] | None:
    """Where the nested run's call counts as waiting: under the step it serves in the
    runs above, up to the first where a sibling of that step may give back (``None``:
    none may, or the run is not nested: it must not wait)."""
    if top_ups is None or top_ups.above is None or top_ups.deciding or top_ups.ledger is None:
        return None
    marks: list[tuple[TopUps, Hashable]] = []
    at: TopUps | None
    at, key = top_ups.above
    while at is not None:
        ledger = at.ledger
        if ledger is None or key not in ledger.reserved or at.deciding or key in at.refused:
            return None
        marks.append((at, key))
        if givers(at, ledger, key):
            return marks
        at, key = at.above or (None, key)
    return None


def may_wait(top_ups: TopUps | None) -> bool:
    """Whether a nested run's call refused now may wait for the run above (``afforded``)."""
    return _marks(top_ups) is not None


async def waited(ledger: BudgetLedger, top_ups: TopUps | None) -> bool:
    """A nested run's call, or check before one, that ``afford`` refused just now (no
    ``await`` since): wait for one give-back in the tree of runs while a sibling above
    may give back, then ask again (``True``); ``False``: it may not wait, the refusal
    stands. The one path every such wait takes: the planner's, critic's, compressor's
    and synthesizer's calls (``afforded``), the checks before a critique, a compression
    and a dispatch (the planner's ``_waits_above``), and the guards' judges."""
    if (marks := _marks(top_ups)) is None:
        return False
    await wait_marked(ledger, marks)
    return True


async def afforded(
    ledger: BudgetLedger, top_ups: TopUps | None, tokens_needed: int, usd_needed: int
) -> BudgetLimit | None:
    """``afford`` for one model call, asked again at each give-back in the tree of runs
    while a sibling above may give back; the limit still in the way once none may."""
    while (
        limit := afford(ledger, top_ups, tokens_needed=tokens_needed, usd_needed=usd_needed)
    ) is not None:
        if not await waited(ledger, top_ups):
            return limit
    return None
