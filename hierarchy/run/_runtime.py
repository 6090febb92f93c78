"""What every run of a started team shares: its planner, workers, checks and budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from regiment.actors import ActorRef
from regiment.hierarchy._budget import Budget
from regiment.hierarchy._checks import Check
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._memory import Compression
from regiment.hierarchy._messages import WorkerMessage
from regiment.hierarchy._planner import Planner
from regiment.hierarchy.guard._roles import RoleGuards
from regiment.hierarchy.run._structured import AnswerShape
from regiment.hierarchy.workers._worker import WorkerSpec
from regiment.models import ModelSettings
from regiment.telemetry import Telemetry

__all__ = ("TeamRuntime",)


@dataclass(frozen=True, kw_only=True)
class TeamRuntime:
    """What every run of a started team shares."""

    name: str
    planner: Planner
    workers: Mapping[str, WorkerSpec]
    worker_refs: Mapping[str, ActorRef[WorkerMessage, None]]
    checks: Mapping[str, Check]
    budget: Budget
    concurrency: int
    critic: Critic | None
    compression: Compression | None
    telemetry: Telemetry
    settings: ModelSettings | None = None  # every role's default (Team.settings)
    guards: RoleGuards = field(default_factory=RoleGuards)
    output: AnswerShape | None = None  # Team(output_type=...): the synthesis answers in JSON
