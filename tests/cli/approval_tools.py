"""Tools for ``test_validate_approvals``: one that always waits for a decision, one whose
rule picks the calls that wait, one that never does."""

from __future__ import annotations

from regiment.tools import tool


@tool(requires_approval=True)
def wire(account: str) -> str:
    """Wire money."""
    return f"wired {account}"


@tool(requires_approval=lambda args: len(str(args["note"])) > 3)
def note(note: str) -> str:
    """Leave a note."""
    return note


@tool
def look(order: str) -> str:
    """Look an order up."""
    return order
