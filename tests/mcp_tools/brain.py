"""One scripted model for every role of a small test team."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from regiment.models import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)

WorkFn = Callable[[str, list[ToolResultPart], ModelRequest], Awaitable[ModelResponse | str]]


def plan_json(*steps: Mapping[str, object]) -> str:
    return json.dumps({"steps": list(steps)})


@dataclass
class Brain:
    """Plans from a list, works through ``work``, and synthesises a fixed answer."""

    plans: list[str]
    work: WorkFn
    plan_requests: list[ModelRequest] = field(default_factory=list)

    async def __call__(self, request: ModelRequest) -> ModelResponse | str:
        if request.role in ("planner", "replanner"):
            self.plan_requests.append(request)
            return self.plans[len(self.plan_requests) - 1]
        if request.role == "worker":
            first = "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))
            match = re.search(r"Your step \((\w+)\): (.*)", first)
            assert match is not None, first
            last = request.messages[-1]
            results = [p for p in last.parts if isinstance(p, ToolResultPart)]
            return await self.work(match.group(2), results if last.role == "user" else [], request)
        return text_response("final answer")


def add_brain(request: ModelRequest) -> ModelResponse | str:
    """A team file's brain (``tests.mcp_tools.brain:add_brain``): one step, whose worker
    calls ``add(1, 2)`` and answers with the result, which is the team's answer too."""
    if request.role in ("planner", "replanner"):
        return plan_json({"description": "add 1 and 2"})
    results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
    if request.role == "worker":
        return (
            f"the sum: {results[0].content}"
            if results
            else tool_call_response("add", {"a": 1, "b": 2})
        )
    texts = [p.text for m in request.messages for p in m.parts if isinstance(p, TextPart)]
    found = re.search(r"the sum: \{[^}]*\}", "\n".join(texts))
    return found.group(0) if found else "no sum"
