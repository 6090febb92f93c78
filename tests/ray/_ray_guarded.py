"""A refund team with guards and model settings, for the Ray tests: the team's guard
rewrites a refund's amount, the worker's guard on ``issue_refund`` trips on a blocked
order, and the worker answers with what its tool said and the settings its model call
carried. Everything is module-level (importable on the Ray node as
``tests.ray._ray_guarded``), so the guards pickle by reference.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import threading
from typing import Any, Literal

import msgspec

from regiment.hierarchy import Budget, Planner, Ray, Team, Worker
from regiment.hierarchy.guard import Guardrail, Outcome, Pass, Rewrite, ToolCallSubject, Trip
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ScriptedModel,
    TextPart,
    ToolResultPart,
    text_response,
    tool_call_response,
)
from regiment.tools import tool

__all__ = ("BLOCKED", "CAP_LOCKED", "cap_amount", "guarded_team", "guarded_worker", "issue_refund")

OnTrip = Literal["fail_step", "tell_model"]
TEAM_SETTINGS = ModelSettings(max_tokens=500, temperature=0.2)
WORKER_SETTINGS = ModelSettings(temperature=0.9, top_p=0.5)


def cap_amount(subject: ToolCallSubject) -> Outcome:
    """The team's guard: no refund above 100 (rewritten down to 100)."""
    amount = subject.arguments.get("amount")
    if subject.tool == "issue_refund" and isinstance(amount, int) and amount > 100:
        return Rewrite(dataclasses.replace(subject, arguments={**subject.arguments, "amount": 100}))
    return Pass()


def _locking(check: Any) -> Guardrail:
    """``check`` behind a lock: a guard that cannot be pickled, as one holding a
    model client's connection pool (a ``judge``) cannot."""
    lock = threading.Lock()

    def cap_amount_locked(subject: ToolCallSubject) -> Outcome:
        with lock:
            outcome: Outcome = check(subject)
            return outcome

    return Guardrail(cap_amount_locked, "tool_call")


CAP_LOCKED = _locking(cap_amount)


@tool
def issue_refund(order_id: int, amount: int) -> str:
    """Refund ``amount`` of an order (says which process did it)."""
    return f"refunded {amount} of order {order_id} in process {os.getpid()}"


def _blocked(subject: ToolCallSubject) -> Outcome:
    if subject.arguments.get("order_id") == 13:
        return Trip("order 13 is under investigation")
    return Pass()


BLOCKED: dict[OnTrip, Guardrail] = {
    on_trip: Guardrail(_blocked, "tool_call", name="blocked_orders", on_trip=on_trip)
    for on_trip in ("fail_step", "tell_model")
}


def _step_text(request: ModelRequest) -> str:
    return "\n".join(p.text for p in request.messages[0].parts if isinstance(p, TextPart))


def guarded_brain(request: ModelRequest) -> ModelResponse:
    """Plan one refund (the goal's order); refund 500 of it; say what happened."""
    if request.role == "planner":
        order = re.search(r"order (\d+)", _step_text(request))
        assert order is not None
        step = {"description": f"refund order {order.group(1)}", "worker": "billing"}
        return text_response(json.dumps({"steps": [step]}))
    if request.role == "synthesizer":
        return text_response("done")
    last = request.messages[-1]
    results = [p for p in last.parts if isinstance(p, ToolResultPart)]
    if not results:
        order = re.search(r"refund order (\d+)", _step_text(request))
        assert order is not None
        return tool_call_response("issue_refund", {"order_id": int(order.group(1)), "amount": 500})
    settings = msgspec.to_builtins(request.settings)
    said = f"tool said: {results[0].content} (error={results[0].is_error})"
    return text_response(f"{said} settings={json.dumps(settings, sort_keys=True)}")


def guarded_worker(ledger: str, on_trip: OnTrip) -> Worker:
    """The ``billing`` worker: its refunds are lines in ``ledger`` (with the process id)."""

    @tool
    def issue_refund(order_id: int, amount: int) -> str:
        """Refund ``amount`` of an order."""
        line = {"order_id": order_id, "amount": amount, "pid": os.getpid()}
        with open(ledger, "a", encoding="utf-8") as file:
            file.write(json.dumps(line) + "\n")
        return f"refunded {amount} of order {order_id}"

    return Worker(
        name="billing",
        description="Issues refunds.",
        model=ScriptedModel(guarded_brain),
        tools=[issue_refund],
        settings=WORKER_SETTINGS,
        tool_guardrails={"issue_refund": [BLOCKED[on_trip]]},
    )


def guarded_team(
    ledger: str, on_trip: OnTrip = "tell_model", *, team_guards: Any = (cap_amount,), **ray: Any
) -> Team:
    """The team, its worker in-process, or on Ray when ``ray`` placement keys are given."""
    worker = guarded_worker(ledger, on_trip)
    if ray:
        build = functools.partial(guarded_worker, ledger, on_trip)
        worker = dataclasses.replace(
            worker, tools=worker.toolset, placement=Ray(build=build, **ray)
        )
    return Team(
        name="guarded",
        planner=Planner(model=ScriptedModel(guarded_brain)),
        workers=[worker],
        budget=Budget(replans=0),
        guardrails=list(team_guards),
        settings=TEAM_SETTINGS,
    )
