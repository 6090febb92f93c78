"""The span of a run's planner-side model call (plan, replan, round, critique,
compress, synthesis): see ``PhaseCalls``."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, assert_never, final

import msgspec
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from regiment.telemetry import semconv as sc

if TYPE_CHECKING:
    from regiment.hierarchy.run._messages import Purpose
    from regiment.hierarchy.run._runtime import TeamRuntime

__all__ = ("SpanFacts", "phase_span")


@final
class SpanFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a phase span says about the run when the call starts."""

    version: int
    round: int
    reason: str


def phase_span(
    team: TeamRuntime, agent: str, purpose: Purpose, facts: SpanFacts
) -> AbstractContextManager[Span]:
    """A call's phase span (``agent``: the role that answers it), left open when its block
    exits: ``PhaseCalls._call`` ends it once the reply has been read (a plan's span then says how
    many steps it has)."""
    telemetry, planner = team.telemetry, team.planner.name
    answers: dict[str, AttributeValue] = {sc.GEN_AI_AGENT_NAME: agent}
    match purpose:
        case "plan":
            return telemetry.plan_span(planner, plan_version=1, end_on_exit=False)
        case "replan":
            if telemetry.metrics is not None:
                telemetry.metrics.replan(team.name)
            return telemetry.replan_span(
                old_version=facts.version,
                reason=facts.reason,
                planner=planner,
                end_on_exit=False,
            )
        case "round":
            return telemetry.plan_span(
                planner,
                plan_version=facts.version + 1,
                attributes={"regiment.round": facts.round},
                end_on_exit=False,
            )
        case "critique":  # each names the role that answers, as its chat span does
            attributes = {sc.REGIMENT_ROUND: facts.round, **answers}
            return telemetry.phase_span("critique", attributes=attributes, end_on_exit=False)
        case "compress":
            return telemetry.phase_span("compress", attributes=answers, end_on_exit=False)
        case "synthesis":
            return telemetry.phase_span("synthesize", attributes=answers, end_on_exit=False)
        case _:
            assert_never(purpose)
