"""The refund story's check: was the order eligible? (Importable from the team file.)"""

from __future__ import annotations

from regiment.hierarchy import StepReport

__all__ = ("eligible", "why_not")


def eligible(report: StepReport) -> bool:
    """The step's ``check_eligibility`` call said the order can be refunded."""
    result = report.tool_result("check_eligibility")
    return isinstance(result, dict) and result.get("eligible") is True


def why_not(report: StepReport) -> str:
    """Why the order cannot be refunded, for the planner's replan."""
    result = report.tool_result("check_eligibility")
    reason = result.get("reason") if isinstance(result, dict) else None
    return f"order is not eligible for a refund: {reason}"
