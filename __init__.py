"""regiment: hierarchical multi-agent work on anyio actors."""

from regiment.errors import (
    ActorError,
    ActorFailed,
    ActorStopped,
    AskTimeout,
    BudgetExceeded,
    ConfigError,
    MailboxFull,
    ModelAPIError,
    ModelConnectionError,
    ModelError,
    PlanError,
    RegimentError,
    RunCancelled,
    RunError,
    ScriptExhausted,
    StepFailed,
    ToolArgumentsInvalid,
    ToolError,
)

__version__ = "0.1.0"

__all__ = (
    "ActorError",
    "ActorFailed",
    "ActorStopped",
    "AskTimeout",
    "BudgetExceeded",
    "ConfigError",
    "MailboxFull",
    "ModelAPIError",
    "ModelConnectionError",
    "ModelError",
    "PlanError",
    "RegimentError",
    "RunCancelled",
    "RunError",
    "ScriptExhausted",
    "StepFailed",
    "ToolArgumentsInvalid",
    "ToolError",
    "__version__",
)
