"""The refund policy as a plan guardrail: no refund before an eligibility check.

A plan whose refund step does not come after (depend on) an eligibility step
goes back to the planner with the reason, before any step runs.
"""

from __future__ import annotations

from regiment.hierarchy.guard import requires_step_before

__all__ = ("eligibility_first",)

eligibility_first = requires_step_before(
    "issue_refund",
    "check_eligibility",
    mentions=["issue the refund", "issue_refund", "refund the customer"],
    first_mentions=["eligibility", "eligible"],
    name="eligibility_first",
)
