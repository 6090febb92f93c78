"""What a run has spent, by role, against its budget (a part of the run's book)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from regiment._text import counted
from regiment.hierarchy._budget import BudgetLedger
from regiment.hierarchy._messages import BudgetLimit
from regiment.models import Usage

__all__ = ("Spending",)


@final
@dataclass(slots=True)
class Spending:
    """What the run has spent, by role, against its budget. What it spends is charged
    to ``ledger.spent`` (:class:`~regiment.hierarchy._spent.Spent`), by role too, in one call."""

    ledger: BudgetLedger
    exhausted: BudgetLimit | None = None  # the limit that ran out, if one did
    refused_tool_calls: int = 0  # refused for want of a step's tool-call share

    def refused_and_spent(self, *, more: int = 0) -> bool:
        """Whether tool calls were refused (``more`` about to be counted) and the
        run's own tool calls are all spent: then the run ends ``partial``. Checked
        on each report and when the plan is done, so the outcome does not depend
        on the order the reports came in."""
        limit = self.ledger.budget.tool_calls
        refused = self.refused_tool_calls + more
        return bool(refused) and limit is not None and self.ledger.spent.tool_calls >= limit

    def refusals(self) -> str:
        limit, refused = self.ledger.budget.tool_calls or 0, self.refused_tool_calls
        were = "was" if refused == 1 else "were"
        are = "is" if limit == 1 else "are"
        return (
            f"{counted(refused, 'tool call')} {were} refused "
            f"and the run's {counted(limit, 'tool call')} {are} all spent"
        )

    @property
    def usage_by_role(self) -> dict[str, Usage]:
        """What each role has used, in the order the roles first spent."""
        return self.ledger.spent.by_role()
