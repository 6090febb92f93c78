"""The refund team: a billing worker, a comms worker, and an eligibility check."""

from __future__ import annotations

from regiment.hierarchy import Check, Planner, StepReport, Team, Worker
from regiment.models import Model

from .tools import Ledger, make_tools

__all__ = ("GOAL", "build_team")

GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


def _eligible(report: StepReport) -> bool:
    result = report.tool_result("check_eligibility")
    return isinstance(result, dict) and result.get("eligible") is True


def _why_not(report: StepReport) -> str:
    result = report.tool_result("check_eligibility")
    reason = result.get("reason") if isinstance(result, dict) else None
    return f"order is not eligible for a refund: {reason}"


def build_team(model: Model, ledger: Ledger) -> Team:
    """The team, with every role on ``model``."""
    tools = make_tools(ledger)
    return Team(
        name="refunds",
        planner=Planner(model=model, max_steps=6),
        workers=[
            Worker(
                name="billing",
                description="Checks refund eligibility, issues refunds, flags exceptions.",
                model=model,
                tools=tools["billing"],
            ),
            Worker(
                name="comms",
                description="Writes and sends e-mails to customers.",
                model=model,
                tools=tools["comms"],
            ),
        ],
        checks={
            "eligible": Check(
                description="the order is eligible for a refund",
                predicate=_eligible,
                explain=_why_not,
            )
        },
    )
