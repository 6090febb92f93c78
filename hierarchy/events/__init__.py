"""The typed events a run emits, as a closed union.

``RunningTeam.stream(goal)`` yields them as they happen, and ``RunResult.events``
holds the same sequence, so the stream and the result tell the same story.

Three events are live progress rather than run state: ``TextDelta`` (a piece of a model's reply
as it streams), ``ToolCallStarted`` and ``ToolCallFinished``. Only ``stream(goal)`` carries
them (``run(goal)`` streams nothing), and they are neither in ``RunResult.events`` nor
journaled: they are many, and what they tell is already recorded (the replies, the tool
outcomes in each step's report). A consumer that only wants the answer as it is written keeps
the ``TextDelta`` s whose ``role`` is ``"synthesizer"``.

The event types are listed once, in ``__all__`` here: ``regiment.hierarchy`` re-exports them
from it, and code that handles every event matches on ``events.<Type>`` (``from
regiment.hierarchy import events``).

The types are defined by family (``_run``: the run and its plans; ``_steps``: a step's
outcome; ``_live``: the live events; ``_oversight``: budgets, guardrails, approvals); this
module is where they are public.
"""

from __future__ import annotations

from typing import TypeAlias

from regiment.hierarchy.events._live import TextDelta, ToolCallFinished, ToolCallStarted
from regiment.hierarchy.events._oversight import (
    ApprovalRequested,
    ApprovalResolved,
    BudgetExhausted,
    BudgetToppedUp,
    GuardrailRewrote,
    GuardrailTripped,
)
from regiment.hierarchy.events._run import (
    ContextCompressed,
    CritiqueCompleted,
    PlanCreated,
    Replanned,
    RoundStarted,
    RunCompleted,
    RunFailed,
    RunStarted,
    StaleReportDropped,
    SynthesisStarted,
)
from regiment.hierarchy.events._steps import (
    CheckFailed,
    StepCompleted,
    StepDispatched,
    StepErrored,
    ToolFailed,
)

__all__ = (
    "ApprovalRequested",
    "ApprovalResolved",
    "BudgetExhausted",
    "BudgetToppedUp",
    "CheckFailed",
    "ContextCompressed",
    "CritiqueCompleted",
    "Event",
    "GuardrailRewrote",
    "GuardrailTripped",
    "PlanCreated",
    "Replanned",
    "RunCompleted",
    "RunFailed",
    "RoundStarted",
    "RunStarted",
    "StaleReportDropped",
    "StepCompleted",
    "StepDispatched",
    "StepErrored",
    "SynthesisStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolFailed",
)


Event: TypeAlias = (
    RunStarted
    | PlanCreated
    | StepDispatched
    | StepCompleted
    | StepErrored
    | ToolFailed
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | CheckFailed
    | Replanned
    | StaleReportDropped
    | CritiqueCompleted
    | RoundStarted
    | ContextCompressed
    | SynthesisStarted
    | BudgetExhausted
    | BudgetToppedUp
    | GuardrailTripped
    | GuardrailRewrote
    | ApprovalRequested
    | ApprovalResolved
    | RunCompleted
    | RunFailed
)
