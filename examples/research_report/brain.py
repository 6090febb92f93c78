"""An offline brain for the research report: plan, research, write, introduce."""

from __future__ import annotations

import json
import re

from regiment.models import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)

__all__ = ("research_brain",)

TOPICS = ("history", "efficiency", "cost")


def _first_user_text(request: ModelRequest) -> str:
    return "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))


def _plan() -> ModelResponse:
    steps: list[dict[str, object]] = [
        {
            "id": f"s{i}",
            "description": f"Research the {topic} of heat pumps",
            "worker": "researcher",
        }
        for i, topic in enumerate(TOPICS, start=1)
    ]
    steps.append(
        {
            "id": "s4",
            "description": "Write a short report on heat pumps from the research",
            "worker": "writer",
            "depends_on": ["s1", "s2", "s3"],
        }
    )
    return text_response(json.dumps({"steps": steps}))


def _research(request: ModelRequest, step: str) -> ModelResponse:
    last = request.messages[-1]
    results = [p for p in last.parts if isinstance(p, ToolResultPart)]
    if results:
        return text_response(str(results[-1].content))
    topic = next((t for t in TOPICS if t in step), "history")
    return tool_call_response("find_notes", {"topic": topic})


def _write(request: ModelRequest) -> ModelResponse:
    text = _first_user_text(request)
    findings = re.findall(r"^- s\d: (.*)$", text, re.M)
    body = "\n".join(f"- {finding}" for finding in findings)
    return text_response(
        f"# Heat pumps in brief\n\n{body}\n\nIn short: efficient, old, and cheap to run."
    )


def research_brain(request: ModelRequest) -> ModelResponse:
    """Answer one request of any role in the research report team."""
    match (request.role, request.worker):
        case ("planner" | "replanner", _):
            return _plan()
        case ("worker", "researcher"):
            step = re.search(r"Your step \(\w+\): (.*)", _first_user_text(request))
            return _research(request, step.group(1) if step else "")
        case ("worker", "writer"):
            return _write(request)
        case ("synthesizer", _):
            return text_response("Here is the report the writer drafted from three research steps:")
        case _:
            raise ValueError(
                f"the research brain does not play the role {request.role!r} ({request.worker!r})"
            )
