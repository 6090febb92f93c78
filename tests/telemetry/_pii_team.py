"""A team whose every content channel carries one marker: the goal, a tool's
arguments and result, a check's explanation, and an exception's message."""

from __future__ import annotations

import json
import uuid

from regiment.hierarchy import Check, Planner, StepReport, Team, Worker
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ScriptFunction,
    TextPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.telemetry import Telemetry
from regiment.tools import tool

__all__ = ("SynthesisBroke", "pii_brain", "pii_team", "pii_worker")


class SynthesisBroke(RuntimeError):
    """What the model raises while writing the final answer."""


def _user_text(request: ModelRequest) -> str:
    last = request.messages[-1]
    return "\n".join(p.text for p in last.parts if isinstance(p, TextPart))


def pii_brain(marker: str) -> ScriptFunction:
    """The scripted model of every role: the marker in each thing it writes."""

    def brain(request: ModelRequest) -> ModelResponse:
        if request.role in ("planner", "replanner"):
            if _user_text(request).startswith("REPLAN"):
                return text_response(json.dumps({"steps": [{"description": "say done"}]}))
            steps = [{"id": "s1", "description": "look the customer up", "check": "known"}]
            return text_response(json.dumps({"steps": steps}))
        if request.role == "worker":
            last = request.messages[-1]
            if any(isinstance(p, ToolResultPart) for p in last.parts):
                return text_response(f"found {marker}")
            if "look the customer up" in _user_text(request) or len(request.messages) == 1:
                return tool_call_response("lookup", {"customer": marker})
            return text_response("done")
        raise SynthesisBroke(f"could not write the answer for {marker}")

    return brain


def pii_worker(marker: str) -> Worker:
    """The worker (built here, or in a Ray replica: it is named by import path)."""

    @tool
    def lookup(customer: str) -> str:
        """Find a customer's record."""
        return f"record of {customer}: {marker}"

    model = ScriptedModel(pii_brain(marker))
    return Worker(name="w", description="looks customers up", model=model, tools=[lookup])


def pii_team(telemetry: Telemetry) -> tuple[Team, str, str]:
    """The team, its goal and the marker; the run fails while synthesizing."""
    marker = f"pii-{uuid.uuid4().hex}@example.com"

    def known(report: StepReport) -> bool:
        return False

    def why(report: StepReport) -> str:
        return f"the customer {marker} is unknown"

    team = Team(
        name="pii",
        planner=Planner(model=ScriptedModel(pii_brain(marker))),
        workers=[pii_worker(marker)],
        checks={"known": Check(description="customer known", predicate=known, explain=why)},
        telemetry=telemetry,
    )
    return team, f"Write to {marker} about the order", marker
