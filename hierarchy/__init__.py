"""Plans, the planner and worker actors, budgets, events and teams."""

from regiment.hierarchy._budget import Budget, BudgetLimit, OnExhausted
from regiment.hierarchy._checks import Check, CheckOutcome
from regiment.hierarchy._config import (
    BudgetConfig,
    CheckConfig,
    CompressionConfig,
    ConfigFormat,
    CriticConfig,
    PlannerConfig,
    PromptsConfig,
    TeamConfig,
    WorkerConfig,
    load_config,
    parse_config,
)
from regiment.hierarchy._config_build import build_team, check_config, load_team, team_files
from regiment.hierarchy._critic import Critic, Verdict, parse_verdict
from regiment.hierarchy._events import (
    BudgetExhausted,
    CheckFailed,
    ContextCompressed,
    CritiqueCompleted,
    Event,
    PlanCreated,
    Replanned,
    RoundStarted,
    RunCompleted,
    RunFailed,
    RunStarted,
    StaleReportDropped,
    StepCompleted,
    StepDispatched,
    StepErrored,
    SynthesisStarted,
    ToolFailed,
)
from regiment.hierarchy._json_io import event_from_json, result_from_json, to_json
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
from regiment.hierarchy._plan import Plan, PlanStep
from regiment.hierarchy._plan_parse import ParsedPlan, parse_plan
from regiment.hierarchy._plan_validate import validate_plan
from regiment.hierarchy._planner import Planner
from regiment.hierarchy._prompts import Prompts
from regiment.hierarchy._result import RunResult, RunStatus
from regiment.hierarchy._team import RunningTeam, Team
from regiment.hierarchy._team_worker import TeamWorker
from regiment.hierarchy._worker import Worker, WorkerActor

__all__ = (
    "event_from_json",
    "result_from_json",
    "to_json",
    "AssignStep",
    "Budget",
    "BudgetConfig",
    "BudgetExhausted",
    "BudgetLimit",
    "CancelStep",
    "Check",
    "CheckConfig",
    "CheckFailed",
    "CheckOutcome",
    "Compression",
    "CompressionConfig",
    "ConfigFormat",
    "ContextCompressed",
    "Critic",
    "CriticConfig",
    "CritiqueCompleted",
    "Event",
    "OnExhausted",
    "ParsedPlan",
    "Plan",
    "PlanCreated",
    "PlanStep",
    "Planner",
    "PlannerConfig",
    "Prompts",
    "PromptsConfig",
    "Replanned",
    "RoundStarted",
    "RunCompleted",
    "RunFailed",
    "RunResult",
    "RunStarted",
    "RunStatus",
    "RunningTeam",
    "StaleReportDropped",
    "StepAllowance",
    "StepCompleted",
    "StepContext",
    "StepDispatched",
    "StepErrored",
    "StepReport",
    "StepStatus",
    "SynthesisStarted",
    "Team",
    "TeamConfig",
    "TeamWorker",
    "ToolFailed",
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
