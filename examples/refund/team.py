"""The refund team: a billing worker, a comms worker, and an eligibility check."""

from __future__ import annotations

from regiment.hierarchy import Check, Planner, Team, Worker
from regiment.models import Model
from regiment.telemetry import Telemetry

from .checks import eligible, why_not
from .guards import eligibility_first
from .tools import Ledger, make_tools

__all__ = ("GOAL", "build_team")

GOAL = "For order 88213 check refund eligibility, issue the refund if eligible, then email the customer."


def build_team(model: Model, ledger: Ledger, *, telemetry: Telemetry | None = None) -> Team:
    """The team, with every role on ``model``; its spans go to ``telemetry`` if given."""
    tools = make_tools(ledger)
    return Team(
        name="refunds",
        planner=Planner(model=model, max_steps=6, guardrails=[eligibility_first]),
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
                predicate=eligible,
                explain=why_not,
            )
        },
        telemetry=telemetry,
    )
