"""Guardrails: checks around every model call, tool call, plan and answer of a
run, that pass, rewrite or trip (see README, "Guardrails")."""

from regiment.hierarchy.guard._builtin import (
    max_length,
    redact_pii,
    requires_step_before,
    tool_result_schema,
)
from regiment.hierarchy.guard._judge import judge
from regiment.hierarchy.guard._note import GuardNote, SubjectKind
from regiment.hierarchy.guard._types import (
    AnswerSubject,
    GuardLike,
    Guardrail,
    OnTrip,
    Outcome,
    Pass,
    PlanSubject,
    ReplySubject,
    RequestSubject,
    Rewrite,
    Subject,
    ToolCallSubject,
    ToolResultSubject,
    Trip,
    as_guardrail,
    guardrail,
)

__all__ = (
    "AnswerSubject",
    "GuardLike",
    "GuardNote",
    "Guardrail",
    "OnTrip",
    "Outcome",
    "Pass",
    "PlanSubject",
    "ReplySubject",
    "RequestSubject",
    "Rewrite",
    "Subject",
    "SubjectKind",
    "ToolCallSubject",
    "ToolResultSubject",
    "Trip",
    "as_guardrail",
    "guardrail",
    "judge",
    "max_length",
    "redact_pii",
    "requires_step_before",
    "tool_result_schema",
)
