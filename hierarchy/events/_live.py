"""The live events: progress only ``stream(goal)`` carries, neither journaled nor in
``RunResult.events`` (see ``regiment.hierarchy.events``)."""

from __future__ import annotations

from regiment._json import JsonValue
from regiment.hierarchy.events._base import Base
from regiment.models import Role

__all__ = (
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
)


class TextDelta(Base, frozen=True, kw_only=True):
    """More text of a model's reply, as it streams (a live event; see the module docstring).

    A call's deltas, joined, are its reply's text; ``call`` names the call (the same on
    each of its deltas, another for each other call of the run: key a call's text on it,
    as two calls of one role may stream at once). ``worker`` and ``step_id``: for
    ``role="worker"``. Once a refusal has streamed, one more delta has ``refused=True``:
    drop the call's text (it fails with ``ModelRefused``). A call whose stream broke and
    is made again sends ``text=""``, ``void=N``: drop the last N characters it streamed.
    """

    role: Role
    text: str
    worker: str | None = None
    step_id: str | None = None
    refused: bool = False
    void: int = 0
    call: str = ""


class ToolCallStarted(Base, frozen=True, kw_only=True):
    """A worker began a tool call (a live event; see the module docstring)."""

    worker: str
    step_id: str
    tool: str
    call_id: str
    arguments: dict[str, JsonValue]


class ToolCallFinished(Base, frozen=True, kw_only=True):
    """A worker's tool call ended (a live event; see the module docstring).

    ``outcome`` is ``"ok"``, or why it failed as ``ToolResult.error_type`` says
    (the exception's class name, ``"timeout"``, ``"invalid_arguments"``, ...);
    ``"cut"`` for a call whose step was cut (a cancel, a replan, a pause, its timeout)
    while its body ran: it may have acted, and its step's report lists it with
    ``error_type`` ``"cut"``; ``"awaiting_approval"`` for one that was still waiting
    for a decision (the body has not run); ``"guardrail"`` for one a guard refused
    (``"GuardrailError"`` if that fails the step). A call held back before it started (its
    plan was over) has no ``ToolCallStarted``/``ToolCallFinished``. ``duration``: seconds,
    less ``approval_wait``: those it waited for a person's (an approver's) decisions.
    """

    worker: str
    step_id: str
    tool: str
    call_id: str
    arguments: dict[str, JsonValue]
    duration: float
    outcome: str
    approval_wait: float = 0.0
