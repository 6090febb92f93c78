"""The research team's one tool: an offline library of notes per topic."""

from __future__ import annotations

import anyio

from regiment.tools import tool

__all__ = ("NOTES", "find_notes")

NOTES: dict[str, str] = {
    "history": "Heat pumps date to Lord Kelvin's 1852 idea; Peter von Rittinger built one in 1856.",
    "efficiency": "A heat pump moves 3-4 units of heat per unit of electricity (COP 3-4) in mild weather.",
    "cost": "Installed air-source heat pumps cost more up front than gas boilers but less to run.",
}


@tool
async def find_notes(topic: str) -> str:
    """Look up research notes on one topic: history, efficiency or cost."""
    await anyio.sleep(0.05)  # stands in for a slow search; the three run side by side
    return NOTES.get(topic, f"no notes on {topic!r}; topics: {', '.join(NOTES)}")
