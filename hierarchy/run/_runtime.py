"""What every run of a started team shares: its planner, workers, checks and budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from regiment.actors import ActorRef
from regiment.hierarchy._budget import Budget
from regiment.hierarchy._checks import Check
from regiment.hierarchy._critic import Critic
from regiment.hierarchy._memory import Compression
from regiment.hierarchy._messages import WorkerMessage
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._planner import Planner
from regiment.hierarchy.guard._roles import GuardRole, RoleGuards
from regiment.hierarchy.guard._types import Guardrail
from regiment.hierarchy.run._structured import AnswerShape
from regiment.hierarchy.workers._live import LiveWorker
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

    # What every run would otherwise build again: made on first use, then shared.

    @cached_property
    def default_worker(self) -> str:
        """The worker a step that names none goes to (the team's first)."""
        return next(iter(self.workers))

    @cached_property
    def model_call_caps(self) -> dict[str, int]:
        """Each worker's iteration cap: the most model calls one of its steps may reserve."""
        return {name: worker.step_model_calls for name, worker in self.workers.items()}

    @cached_property
    def artifacts(self) -> frozenset[str]:
        """The workers whose answers are kept verbatim."""
        return frozenset(name for name, worker in self.workers.items() if worker.artifact)

    @cached_property
    def outcome_guards(self) -> tuple[tuple[Guardrail, ...], tuple[Guardrail, ...]]:
        """The guard chains over every plan and over the answer."""
        return self.guards.plan, self.guards.answer

    @cached_property
    def call_guarded(self) -> bool:
        """Whether a planner-side role has guards around its model calls."""
        roles: tuple[GuardRole, ...] = ("planner", "synthesizer", "critic")
        kinds = ("model_request", "model_reply")
        return any(self.guards.of(role, kind) for role in roles for kind in kinds)

    @property
    def planner_system(self) -> str:
        """The planner's system prompt (it names the workers, their tools and the checks):
        made once, and again when a worker's MCP servers changed their tools."""
        live = self._live_workers
        key = tuple(w.capabilities for w in live) if live else ()
        made: tuple[tuple[tuple[str, ...], ...], str] | None = self.__dict__.get("_planner")
        if made is None or made[0] != key:
            made = (
                key,
                self.planner.prompts.planner_system(
                    team=self.name,
                    workers={n: (w.description, w.capabilities) for n, w in self.workers.items()},
                    checks={n: c.description for n, c in self.checks.items()},
                    max_steps=self.planner.max_steps,
                ),
            )
            self.__dict__["_planner"] = made  # frozen: kept as cached_property keeps its own
        return made[1]

    @cached_property
    def _live_workers(self) -> tuple[LiveWorker, ...]:
        """The workers whose tools may change while the team runs (MCP servers)."""
        return tuple(w for w in self.workers.values() if isinstance(w, LiveWorker))

    @cached_property
    def synthesizer_system(self) -> str:
        """The synthesizer's system prompt."""
        return self.planner.prompts.synthesizer_system(team=self.name)

    @cached_property
    def role_callers(self) -> tuple[ModelCaller, ModelCaller, ModelCaller, ModelCaller]:
        """The planner side's model callers: planner, synthesizer, critic, compressor."""
        planner, critic, compression = self.planner, self.critic, self.compression
        telemetry = self.telemetry

        def tuned(role: ModelSettings | None) -> ModelSettings | None:
            return role if self.settings is None else self.settings.merge(role)

        synth = planner.synthesizer_model or planner.model
        critic_model = (critic.model if critic else None) or planner.model
        compressor = (compression.model if compression else None) or planner.model
        return (
            ModelCaller(planner.model, planner.name, telemetry, tuned(planner.settings)),
            ModelCaller(synth, "synthesizer", telemetry, tuned(planner.synthesizer_settings)),
            ModelCaller(critic_model, "critic", telemetry, tuned(critic and critic.settings)),
            ModelCaller(
                compressor, "compressor", telemetry, tuned(compression and compression.settings)
            ),
        )
