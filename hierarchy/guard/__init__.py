"""Guardrails: checks around every model call, tool call, plan and answer of a
run, that pass, rewrite or trip (see README, "Guardrails")."""

from typing import TYPE_CHECKING

from regiment._lazy import LazyNames

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

# Each name loads with its module on first use (issue #22): a run without
# guardrails loads neither the built-in guardrails nor the judge.
_LAZY_NAMES = LazyNames(
    __name__,
    {
        "regiment.hierarchy.guard._builtin": (
            "max_length",
            "redact_pii",
            "requires_step_before",
            "tool_result_schema",
        ),
        "regiment.hierarchy.guard._judge": ("judge",),
        "regiment.hierarchy.guard._note": (
            "GuardNote",
            "SubjectKind",
        ),
        "regiment.hierarchy.guard._types": (
            "AnswerSubject",
            "GuardLike",
            "Guardrail",
            "OnTrip",
            "Outcome",
            "Pass",
            "PlanSubject",
            "ReplySubject",
            "RequestSubject",
            "Rewrite",
            "Subject",
            "ToolCallSubject",
            "ToolResultSubject",
            "Trip",
            "as_guardrail",
            "guardrail",
        ),
    },
)

if TYPE_CHECKING:
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


def __getattr__(name: str) -> object:
    return _LAZY_NAMES.load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
