"""What one tool call produced, for the model and for the record."""

from __future__ import annotations

import json

import msgspec

from regiment._json import JsonObject, JsonValue
from regiment._text import json_shown

__all__ = ("ToolResult",)

_NOT_RAISED = frozenset(("timeout", "guardrail"))


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one tool call.

    Attributes:
        call_id: the model's id for the call.
        tool_name: the name the model called.
        content: what the tool returned (``str`` or JSON-able data), or the error
            message when ``is_error``.
        is_error: whether the call failed; the model is told so.
        error_type: why it failed: ``"invalid_arguments"``, ``"unknown_tool"``,
            ``"timeout"``, ``"approval_denied"``, ``"approval_unavailable"``,
            ``"guardrail"`` (a guardrail refused the call, or withheld or rewrote a
            successful result into an error), or the class name of the exception the
            tool raised (``"ValueError"``).
        duration_s: seconds from the call to its result, less the wait for an approval
            decision (a person's pace is not the tool's).
        attempts: how many times the function body was started (0: it never ran).
        idempotency_key: the key the tool derived from the arguments, if it declares one.
        arguments: the arguments as the model sent them (as a guard rewrote them or
            the approver edited them, if one did; for a call a guard refused, as the
            guard judged them), whether or not they validated; the function got
            their typed form.
    """

    call_id: str
    tool_name: str
    content: JsonValue
    is_error: bool = False
    error_type: str | None = None
    duration_s: float = 0.0
    attempts: int = 0
    idempotency_key: str | None = None
    arguments: JsonObject = msgspec.field(default_factory=dict)

    @property
    def raised(self) -> bool:
        """Whether the tool body raised (its last attempt): not a timeout, not a call
        refused before the body ran (invalid arguments, unknown tool, no approval), not
        a result a guardrail withheld or turned into an error (``"guardrail"``)."""
        return self.is_error and self.attempts > 0 and self.error_type not in _NOT_RAISED

    @property
    def text(self) -> str:
        """The content as the model receives it: strings as they are, other JSON compact."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, separators=(",", ":"), ensure_ascii=False)

    def __repr__(self) -> str:  # its content may be 100,000 characters
        error = f", error_type={self.error_type!r}" if self.is_error else ""
        return (
            f"ToolResult(tool_name={self.tool_name!r}, call_id={self.call_id!r}, "
            f"is_error={self.is_error}{error}, content={json_shown(self.content)})"
        )
