"""Plans, the planner and worker actors, budgets, events and teams.

The team-file names (``TeamConfig``, ``load_team``, ...) live in
``regiment.config``, which builds hierarchy objects; they are still offered
here, loaded on first use, so this room never imports ``config`` itself.
"""

from typing import TYPE_CHECKING

from regiment._lazy import LazyNames

# The event types are what a run streams, so they load with the room; every other
# name loads with its module on first use (issue #22: `from regiment import Team`
# should not pay for approvals, the journal, guardrail helpers or the critic).
from regiment.hierarchy import _result, events
from regiment.hierarchy.events import *  # noqa: F403 (the event types, listed once in events.__all__)

# ``RunCompleted.result`` is a ``RunResult`` and ``RunResult.events`` are events: the two
# modules name each other for type checkers only, and ``_result`` fills its name into
# ``events`` when it loads. Loading it with the room lets ``help()``, ``inspect`` and
# decoding resolve both whichever a program touches first.
del _result

__all__ = (
    *events.__all__,
    "events",
    "AnswerSubject",
    "JournaledEvents",
    "OpenEnds",
    "Guardrail",
    "Pass",
    "PlanSubject",
    "ReplySubject",
    "RequestSubject",
    "Rewrite",
    "ToolCallSubject",
    "ToolResultSubject",
    "Trip",
    "guardrail",
    "decide_in_journal",
    "event_from_json",
    "result_from_json",
    "stopped_resumably",
    "check_goal",
    "to_json",
    "AssignStep",
    "Budget",
    "BudgetLimit",
    "CancelStep",
    "Check",
    "CheckConfig",
    "CheckOutcome",
    "Compression",
    "CompressionConfig",
    "ConfigFormat",
    "Critic",
    "CriticConfig",
    "InvalidValue",
    "OnExhausted",
    "ParsedPlan",
    "Plan",
    "PlanStep",
    "Planner",
    "PlannerConfig",
    "Prompts",
    "PromptsConfig",
    "RunContextFilter",
    "Ray",
    "RunResult",
    "RunStatus",
    "RunEvents",
    "RunningTeam",
    "StepAllowance",
    "StepContext",
    "StepReport",
    "StepStatus",
    "Team",
    "TeamConfig",
    "TeamWorker",
    "ToolOutcome",
    "Verdict",
    "Worker",
    "WorkerActor",
    "WorkerConfig",
    "WorkerMessage",
    "WorkingMemory",
    "build_team",
    "check_config",
    "load_config",
    "load_team",
    "parse_config",
    "parse_memory",
    "parse_plan",
    "parse_verdict",
    "team_files",
    "validate_plan",
)

_LAZY = LazyNames(
    __name__,
    {
        "regiment.hierarchy._approving": ("decide_in_journal",),
        "regiment.hierarchy._replay": ("JournaledEvents",),
        "regiment.hierarchy._open_ends": ("OpenEnds",),
        "regiment.hierarchy._resumable": ("stopped_resumably",),
        "regiment.hierarchy._goal": ("check_goal",),
        "regiment.hierarchy._budget": (
            "Budget",
            "BudgetLimit",
            "OnExhausted",
        ),
        "regiment.hierarchy._checks": (
            "Check",
            "CheckOutcome",
        ),
        "regiment.hierarchy._critic": (
            "Critic",
            "Verdict",
            "parse_verdict",
        ),
        "regiment.hierarchy._json_io": (
            "event_from_json",
            "result_from_json",
            "to_json",
        ),
        "regiment.hierarchy._log_context": ("RunContextFilter",),
        "regiment.hierarchy._memory": (
            "Compression",
            "WorkingMemory",
            "parse_memory",
        ),
        "regiment.hierarchy._messages": (
            "AssignStep",
            "CancelStep",
            "StepAllowance",
            "StepContext",
            "StepReport",
            "StepStatus",
            "ToolOutcome",
            "WorkerMessage",
        ),
        "regiment.hierarchy._planner": ("Planner",),
        "regiment.hierarchy._prompts": ("Prompts",),
        "regiment.hierarchy._ranges": ("InvalidValue",),
        "regiment.hierarchy._result": (
            "RunResult",
            "RunStatus",
        ),
        "regiment.hierarchy._running": ("RunningTeam",),
        "regiment.hierarchy.run._channel": ("RunEvents",),
        "regiment.hierarchy._team": ("Team",),
        "regiment.hierarchy.guard": (
            "AnswerSubject",
            "Guardrail",
            "Pass",
            "PlanSubject",
            "ReplySubject",
            "RequestSubject",
            "Rewrite",
            "ToolCallSubject",
            "ToolResultSubject",
            "Trip",
            "guardrail",
        ),
        "regiment.hierarchy.plan": (
            "ParsedPlan",
            "Plan",
            "PlanStep",
            "parse_plan",
            "validate_plan",
        ),
        "regiment.hierarchy.workers": (
            "Ray",
            "TeamWorker",
            "Worker",
            "WorkerActor",
        ),
    },
)

if TYPE_CHECKING:
    from regiment.hierarchy._approving import decide_in_journal
    from regiment.hierarchy._budget import Budget, BudgetLimit, OnExhausted
    from regiment.hierarchy._checks import Check, CheckOutcome
    from regiment.hierarchy._critic import Critic, Verdict, parse_verdict
    from regiment.hierarchy._goal import check_goal
    from regiment.hierarchy._json_io import event_from_json, result_from_json, to_json
    from regiment.hierarchy._log_context import RunContextFilter
    from regiment.hierarchy._memory import Compression, WorkingMemory, parse_memory
    from regiment.hierarchy._messages import (
        AssignStep,
        CancelStep,
        StepAllowance,
        StepContext,
        StepReport,
        StepStatus,
        ToolOutcome,
        WorkerMessage,
    )
    from regiment.hierarchy._open_ends import OpenEnds
    from regiment.hierarchy._planner import Planner
    from regiment.hierarchy._prompts import Prompts
    from regiment.hierarchy._ranges import InvalidValue
    from regiment.hierarchy._replay import JournaledEvents
    from regiment.hierarchy._result import RunResult, RunStatus
    from regiment.hierarchy._resumable import stopped_resumably
    from regiment.hierarchy._running import RunningTeam
    from regiment.hierarchy._team import Team
    from regiment.hierarchy.guard import (
        AnswerSubject,
        Guardrail,
        Pass,
        PlanSubject,
        ReplySubject,
        RequestSubject,
        Rewrite,
        ToolCallSubject,
        ToolResultSubject,
        Trip,
        guardrail,
    )
    from regiment.hierarchy.plan import ParsedPlan, Plan, PlanStep, parse_plan, validate_plan
    from regiment.hierarchy.run._channel import RunEvents
    from regiment.hierarchy.workers import Ray, TeamWorker, Worker, WorkerActor

# Offered for compatibility: `from regiment.hierarchy import load_team` keeps working.
_FROM_CONFIG = frozenset(
    {
        "CheckConfig",
        "CompressionConfig",
        "ConfigFormat",
        "CriticConfig",
        "PlannerConfig",
        "PromptsConfig",
        "TeamConfig",
        "WorkerConfig",
        "build_team",
        "check_config",
        "load_config",
        "load_team",
        "parse_config",
        "team_files",
    }
)

if TYPE_CHECKING:
    from regiment.config import (
        CheckConfig,
        CompressionConfig,
        ConfigFormat,
        CriticConfig,
        PlannerConfig,
        PromptsConfig,
        TeamConfig,
        WorkerConfig,
        build_team,
        check_config,
        load_config,
        load_team,
        parse_config,
        team_files,
    )


def __getattr__(name: str) -> object:
    # Loaded on first use: config builds hierarchy objects, so importing it here
    # eagerly would point the arrow the wrong way (config -> hierarchy only).
    if name in _FROM_CONFIG:
        import regiment.config

        return getattr(regiment.config, name)
    return _LAZY.load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
