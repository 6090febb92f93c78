"""The refund story's tools: a tiny in-memory order system.

``issue_refund`` is the side effect that must never run for an ineligible order;
the ``Ledger`` records every call so the example and its tests can show it.

``make_tools(ledger)`` gives a fresh set per ledger (what ``team.py`` and the
tests use); the module-level tools write to ``LEDGER`` and are what the team
file names, e.g. ``"examples.refund.tools:check_eligibility"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from regiment.tools import Tool, tool

__all__ = (
    "LEDGER",
    "ORDERS",
    "Ledger",
    "check_eligibility",
    "email_customer",
    "flag_exception",
    "issue_refund",
    "make_tools",
)


ORDERS: dict[str, dict[str, object]] = {
    "88213": {"customer": "ana@example.com", "amount": 129.0, "days_since_shipping": 40},
    "77120": {"customer": "li@example.com", "amount": 45.5, "days_since_shipping": 12},
}
REFUND_WINDOW_DAYS = 30


@dataclass
class Ledger:
    """Every side effect the tools performed, in order."""

    refunds: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    emails: list[dict[str, str]] = field(default_factory=list)


def make_tools(ledger: Ledger) -> dict[str, list[Tool[..., object]]]:
    """The billing and comms tool lists, writing their side effects to ``ledger``."""

    @tool
    def check_eligibility(
        order_id: Annotated[str, Field(description="The order number")],
    ) -> dict[str, object]:
        """Check whether an order can still be refunded (30-day window after shipping)."""
        order = ORDERS.get(order_id)
        if order is None:
            return {
                "order_id": order_id,
                "eligible": False,
                "reason": f"order {order_id} does not exist",
            }
        days = order["days_since_shipping"]
        assert isinstance(days, int)
        eligible = days <= REFUND_WINDOW_DAYS
        reason = (
            f"shipped {days} days ago, within the {REFUND_WINDOW_DAYS}-day window"
            if eligible
            else f"shipped {days} days ago, outside the {REFUND_WINDOW_DAYS}-day window"
        )
        return {
            "order_id": order_id,
            "eligible": eligible,
            "reason": reason,
            "amount": order["amount"],
        }

    @tool(idempotency_key=("order_id",))
    def issue_refund(order_id: str) -> dict[str, object]:
        """Refund an order in full. Only for orders that are eligible."""
        ledger.refunds.append(order_id)
        return {"order_id": order_id, "refunded": True}

    @tool
    def flag_exception(order_id: str, reason: str) -> dict[str, object]:
        """Flag an order for manual review by the billing team, with the reason."""
        ledger.exceptions.append(order_id)
        return {"order_id": order_id, "flagged": True, "reason": reason}

    @tool(idempotency_key=("order_id", "subject"))
    def email_customer(order_id: str, subject: str, body: str) -> dict[str, object]:
        """Email the customer of an order."""
        order = ORDERS.get(order_id, {})
        ledger.emails.append(
            {"to": str(order.get("customer", "unknown")), "subject": subject, "body": body}
        )
        return {"sent": True, "to": order.get("customer", "unknown")}

    return {"billing": [check_eligibility, issue_refund, flag_exception], "comms": [email_customer]}


# The importable tools for examples/refund/team.toml: one in-memory order system per process.
LEDGER = Ledger()
_TOOLS = make_tools(LEDGER)
check_eligibility, issue_refund, flag_exception = _TOOLS["billing"]
(email_customer,) = _TOOLS["comms"]
