"""The service's team: one support worker with a fast tool and a slow one, and its brain."""

from __future__ import annotations

import re

import anyio

from regiment.hierarchy import Planner, Team, Worker
from regiment.models import (
    Model,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.tools import Tool, tool

__all__ = ("build_team", "order_status", "scanner", "support_brain")

STATUS = {
    "88213": "shipped 40 days ago",
    "77120": "shipped 12 days ago",
    "55001": "in the warehouse",
}


@tool
def order_status(order_id: str) -> str:
    """Where an order is."""
    return STATUS.get(order_id, "unknown order")


def scanner(started: anyio.Event | None = None) -> Tool[..., object]:
    """The slow ``warehouse_scan`` tool; sets ``started`` when a scan begins."""

    @tool
    async def warehouse_scan(order_id: str) -> str:
        """Scan the warehouse shelves for an order (slow: minutes)."""
        if started is not None:
            started.set()
        await anyio.sleep(600)  # a slow back office; a client that leaves cancels it
        return f"order {order_id} found on shelf 7"

    return warehouse_scan


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))


def support_brain(request: ModelRequest) -> ModelResponse:
    """Plan one step per goal; the worker calls the tool the step names."""
    text = _text(request)
    order = (re.findall(r"order (\d+)", text) or ["unknown"])[0]
    if request.role == "planner":
        verb = "Scan the warehouse for" if "scan" in text else "Look up the status of"
        return text_response(
            f'{{"steps": [{{"id": "s1", "description": "{verb} order {order}"}}]}}'
        )
    if request.role == "worker":
        last = request.messages[-1]
        results = [p for p in last.parts if isinstance(p, ToolResultPart)]
        if results:
            return text_response(f"order {order}: {results[-1].content}")
        name = "warehouse_scan" if "Scan the warehouse" in text else "order_status"
        return tool_call_response(name, {"order_id": order})
    lines = [line for line in text.splitlines() if line.startswith("- s")]
    return text_response(lines[0].split(": ", 1)[-1] if lines else "nothing was done")


def build_team(model: Model, *, scan_started: anyio.Event | None = None) -> Team:
    """One planner, one support worker (``scan_started``: see ``scanner``)."""
    return Team(
        name="support",
        planner=Planner(model=model),
        workers=[
            Worker(
                name="support",
                description="Answers questions about orders.",
                model=model,
                tools=[order_status, scanner(scan_started)],
            )
        ],
    )
