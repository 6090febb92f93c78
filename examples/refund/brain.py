"""An offline, rule-based "brain" for the refund story.

It reads each request the way a model would (role line, step text, tool
results) and answers for the planner, the workers and the synthesizer. Wrapped
in ``ScriptedModel`` it lets the example run with no network and no API key.
"""

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

__all__ = ("refund_brain",)

PLAN_V1 = [
    {
        "id": "s1",
        "description": "Check refund eligibility of order {order}",
        "worker": "billing",
        "check": "eligible",
    },
    {
        "id": "s2",
        "description": "Issue the refund for order {order}",
        "worker": "billing",
        "depends_on": ["s1"],
    },
    {
        "id": "s3",
        "description": "Email the customer of order {order} that the refund is on the way",
        "worker": "comms",
        "depends_on": ["s2"],
    },
]
PLAN_V2_TAIL = [
    {
        "description": "Flag order {order} as a refund exception for manual review",
        "worker": "billing",
        "depends_on": ["s1"],
    },
    {
        "description": "Email the customer of order {order} that the refund could not be made, and why",
        "worker": "comms",
        "depends_on": ["{flag}"],
    },
]


def _last_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
    return ""


def _first_user_text(request: ModelRequest) -> str:
    return "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))


def _tool_results(request: ModelRequest) -> list[ToolResultPart]:
    last = request.messages[-1]
    return [p for p in last.parts if isinstance(p, ToolResultPart)] if last.role == "user" else []


def _order(text: str) -> str:
    match = re.search(r"order (\d+)", text)
    return match.group(1) if match else "unknown"


def _plan(request: ModelRequest) -> ModelResponse:
    text = _last_user_text(request)
    order = _order(_first_user_text(request))
    if text.startswith("REPLAN"):
        first = int(re.search(r"Number new ids from s(\d+)", text).group(1))  # type: ignore[union-attr]
        tail = [dict(step, id=f"s{first + i}") for i, step in enumerate(PLAN_V2_TAIL)]
        raw = json.dumps({"steps": tail}).replace("{order}", order).replace("{flag}", f"s{first}")
        return text_response(raw)
    return text_response(
        "Here is the plan:\n```json\n"
        + json.dumps({"steps": PLAN_V1}).replace("{order}", order)
        + "\n```"
    )


def _work(request: ModelRequest) -> ModelResponse:
    step = re.search(r"Your step \((\w+)\): (.*)", _first_user_text(request))
    assert step is not None, "a worker request always names its step"
    description = step.group(2)
    order = _order(description)
    results = _tool_results(request)
    if results:
        return text_response(f"Done: {results[-1].content}")
    if "eligibility" in description:
        return tool_call_response("check_eligibility", {"order_id": order})
    if "Issue the refund" in description:
        return tool_call_response("issue_refund", {"order_id": order})
    if "Flag" in description:
        return tool_call_response(
            "flag_exception", {"order_id": order, "reason": "outside the refund window"}
        )
    if "could not be made" in description:
        body = f"We are sorry: the refund for order {order} could not be made (outside the 30-day window). Our billing team will review it."
        return tool_call_response(
            "email_customer", {"order_id": order, "subject": "About your refund", "body": body}
        )
    body = f"Your refund for order {order} is on the way."
    return tool_call_response(
        "email_customer", {"order_id": order, "subject": "Refund on the way", "body": body}
    )


def _synthesize(request: ModelRequest) -> ModelResponse:
    text = _last_user_text(request)
    lines = [line for line in text.splitlines() if line.startswith("- s")]
    return text_response("Summary of what was done:\n" + "\n".join(lines))


def refund_brain(request: ModelRequest) -> ModelResponse:
    """Answer one request of any role in the refund story."""
    match request.role:
        case "planner" | "replanner":
            return _plan(request)
        case "worker":
            return _work(request)
        case "synthesizer":
            return _synthesize(request)
        case _:
            raise ValueError(f"the refund brain does not play the role {request.role!r}")
