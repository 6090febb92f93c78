"""regiment: hierarchical multi-agent work on anyio actors.

A planner actor turns a goal into a versioned plan, hands each step to a bounded
worker actor with its own tools, commits a step only from a report of the current
plan version, replans the tail when a check fails, and synthesises one answer.
The names most programs need are here; each room (``regiment.actors``,
``regiment.tools``, ``regiment.models``, ``regiment.telemetry``,
``regiment.hierarchy``, ``regiment.journal``) exports the rest.
"""

import logging
from typing import TYPE_CHECKING

from regiment import _log_records
from regiment._lazy import LazyNames
from regiment._version import __version__
from regiment.errors import (
    ActorError,
    ActorFailed,
    ActorStopped,
    ApprovalError,
    AskTimeout,
    BudgetExceeded,
    ClusterLost,
    ConfigError,
    GuardrailError,
    HookFailed,
    JournalError,
    MailboxFull,
    ModelAPIError,
    ModelConnectionError,
    ModelError,
    ModelRefused,
    OutputInvalid,
    PlanError,
    RegimentError,
    RetryableToolError,
    RunCancelled,
    RunError,
    ScriptExhausted,
    StepFailed,
    ToolArgumentsInvalid,
    ToolError,
    WorkerLost,
)

# A library only adds a NullHandler; `regiment run -v` and `regiment serve` add real ones.
logging.getLogger("regiment").addHandler(logging.NullHandler())
_log_records.install()  # every record of ours carries trace_id / span_id

__all__ = (
    "ActorError",
    "ActorFailed",
    "ActorStopped",
    "AnthropicModel",
    "ApprovalError",
    "ApprovalRequest",
    "Approve",
    "Approver",
    "AskTimeout",
    "Budget",
    "BudgetExceeded",
    "Check",
    "ClusterLost",
    "Compression",
    "ConfigError",
    "Critic",
    "Deny",
    "EditArguments",
    "Event",
    "Guardrail",
    "GuardrailError",
    "HookFailed",
    "JournalError",
    "MailboxFull",
    "Model",
    "ModelAPIError",
    "ModelConnectionError",
    "ModelError",
    "ModelRefused",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "Pass",
    "Plan",
    "PlanError",
    "PlanStep",
    "Planner",
    "Price",
    "Prompts",
    "Ray",
    "RegimentError",
    "RetryableToolError",
    "Rewrite",
    "OutputInvalid",
    "RunCancelled",
    "RunContext",
    "RunError",
    "RunResult",
    "RunningTeam",
    "ScriptExhausted",
    "ScriptedModel",
    "StepFailed",
    "StepReport",
    "Team",
    "TeamConfig",
    "TeamWorker",
    "SpanCollector",
    "Telemetry",
    "TextDelta",
    "Tool",
    "ToolArgumentsInvalid",
    "ToolError",
    "ToolResult",
    "Toolset",
    "Trip",
    "Usage",
    "Worker",
    "WorkerLost",
    "configure_tracing",
    "guardrail",
    "load_team",
    "run_main",
    "text_response",
    "tool",
    "tool_call_response",
    "__version__",
)

_LAZY = LazyNames(
    __name__,
    {
        "regiment.hierarchy": (
            "Budget",
            "Check",
            "Compression",
            "Critic",
            "Event",
            "Guardrail",
            "Pass",
            "Plan",
            "PlanStep",
            "Planner",
            "Prompts",
            "Ray",
            "Rewrite",
            "RunResult",
            "RunningTeam",
            "StepReport",
            "Team",
            "TeamWorker",
            "TextDelta",
            "Trip",
            "Worker",
            "guardrail",
        ),
        "regiment.models": (
            # The anthropic SDK takes seconds to import; AnthropicModel loads it only when used.
            "AnthropicModel",
            "Model",
            "ModelRequest",
            "ModelResponse",
            "ModelSettings",
            "Price",
            "ScriptedModel",
            "Usage",
            "text_response",
            "tool_call_response",
        ),
        # configure_tracing needs the OpenTelemetry SDK (~50 ms); a library user may never call it.
        "regiment.telemetry": ("SpanCollector", "Telemetry", "configure_tracing"),
        "regiment._script": ("run_main",),
        # Team files (tomllib, the config schema, imports by dotted path) load on first use.
        "regiment.config": ("TeamConfig", "load_team"),
        "regiment.tools": (
            "ApprovalRequest",
            "Approve",
            "Approver",
            "Deny",
            "EditArguments",
            "RunContext",
            "Tool",
            "ToolResult",
            "Toolset",
            "tool",
        ),
    },
)

if TYPE_CHECKING:
    from regiment._script import run_main
    from regiment.config import TeamConfig, load_team
    from regiment.hierarchy import (
        Budget,
        Check,
        Compression,
        Critic,
        Event,
        Guardrail,
        Pass,
        Plan,
        Planner,
        PlanStep,
        Prompts,
        Ray,
        Rewrite,
        RunningTeam,
        RunResult,
        StepReport,
        Team,
        TeamWorker,
        TextDelta,
        Trip,
        Worker,
        guardrail,
    )
    from regiment.models import (
        AnthropicModel,
        Model,
        ModelRequest,
        ModelResponse,
        ModelSettings,
        Price,
        ScriptedModel,
        Usage,
        text_response,
        tool_call_response,
    )
    from regiment.telemetry import SpanCollector, Telemetry, configure_tracing
    from regiment.tools import (
        ApprovalRequest,
        Approve,
        Approver,
        Deny,
        EditArguments,
        RunContext,
        Tool,
        ToolResult,
        Toolset,
        tool,
    )


def __getattr__(name: str) -> object:
    # `import regiment` loads only the errors; each room loads when one of its names is
    # first asked for (issue #22: a CLI or a service that needs one room pays for one).
    return _LAZY.load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
