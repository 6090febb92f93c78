"""The run journal: what a run did, durably, so a crashed run can resume without repeating side effects.

Placeholder docstring; the design is written out below once the backends exist.
"""

from regiment.errors import JournalError, LeaseHeld, LeaseLost
from regiment.journal._memory import MemoryJournal
from regiment.journal._open import JournalSpec, open_journal
from regiment.journal._postgres import PostgresJournal
from regiment.journal._protocol import Journal
from regiment.journal._records import (
    ApprovalDecided,
    ApprovalRequested,
    EventRecorded,
    FinalStatus,
    ModelCallFinished,
    PlanVersion,
    Record,
    RunCreated,
    RunFinished,
    StepDispatched,
    StepReported,
    ToolCallFinished,
    ToolCallStarted,
)
from regiment.journal._sqlite import SqliteJournal
from regiment.journal._views import (
    CommittedStep,
    Entry,
    JournaledCall,
    Lease,
    RunInfo,
    RunStatus,
    SessionRun,
)

__all__ = (
    "ApprovalDecided",
    "ApprovalRequested",
    "CommittedStep",
    "Entry",
    "EventRecorded",
    "FinalStatus",
    "Journal",
    "JournalError",
    "JournalSpec",
    "JournaledCall",
    "Lease",
    "LeaseHeld",
    "LeaseLost",
    "MemoryJournal",
    "ModelCallFinished",
    "PlanVersion",
    "PostgresJournal",
    "Record",
    "RunCreated",
    "RunFinished",
    "RunInfo",
    "RunStatus",
    "SessionRun",
    "SqliteJournal",
    "StepDispatched",
    "StepReported",
    "ToolCallFinished",
    "ToolCallStarted",
    "open_journal",
)
