"""What a run has spent, by role, against its budget (a part of the run's book)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

from regiment.hierarchy._budget import BudgetLedger
from regiment.hierarchy._messages import BudgetLimit
from regiment.models import Usage

__all__ = ("Spending",)


@final
@dataclass(slots=True)
class Spending:
    """What the run has spent, by role, against its budget."""

    ledger: BudgetLedger
    # role -> its usage's five counts, added up in place (no Usage made per charge)
    _roles: dict[str, list[int]] = field(default_factory=dict)
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
        limit = self.ledger.budget.tool_calls
        return (
            f"{self.refused_tool_calls} tool call(s) were refused "
            f"and the run's {limit} tool calls are all spent"
        )

    @property
    def usage_by_role(self) -> dict[str, Usage]:
        """What each role has used, in the order the roles first spent."""
        return {
            role: Usage(
                input_tokens=counts[0],
                output_tokens=counts[1],
                cache_read_tokens=counts[2],
                cache_write_tokens=counts[3],
                micro_usd=counts[4],
            )
            for role, counts in self._roles.items()
        }

    def charge(self, role: str, usage: Usage, model_calls: int, tool_calls: int = 0) -> None:
        """Charge one report's or one call's ``usage`` to ``role`` and to the ledger."""
        self.ledger.charge(usage, model_calls, tool_calls)
        counts = self._roles.get(role)
        if counts is None:
            self._roles[role] = counts = [0, 0, 0, 0, 0]
        counts[0] += usage.input_tokens
        counts[1] += usage.output_tokens
        counts[2] += usage.cache_read_tokens
        counts[3] += usage.cache_write_tokens
        counts[4] += usage.micro_usd
