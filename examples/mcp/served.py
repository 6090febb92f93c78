"""The scripted brain of examples/mcp/team.toml: a two-step plan, answered offline."""

from __future__ import annotations

import json

from regiment.models import ModelRequest, ModelResponse


def brain(request: ModelRequest) -> ModelResponse | str:
    """Plan two steps, do each by echoing it, and sum up."""
    if request.role in ("planner", "replanner"):
        goal = request.messages[0].text
        steps = [
            {"description": f"gather facts for: {goal}"},
            {"description": f"write it up: {goal}", "depends_on": ["s1"]},
        ]
        return json.dumps({"steps": steps})
    if request.role == "worker":
        return "done: " + request.messages[0].text.splitlines()[-1]
    return "The team's answer: " + request.messages[0].text.splitlines()[0]
