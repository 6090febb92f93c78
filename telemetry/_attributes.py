"""Building the attribute sets of regiment's spans (kept apart from ``Telemetry``)."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.util.types import AttributeValue

from regiment.telemetry import _semconv as sc
from regiment.telemetry._content import redacted_cut

__all__ = (
    "agent_attributes",
    "drop_none",
    "phase_attributes",
    "plan_attributes",
    "replan_attributes",
    "run_attributes",
    "tool_attributes",
    "verify_attributes",
)


def drop_none(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    """The attributes whose value is known."""
    return {key: value for key, value in attributes.items() if value is not None}


def plan_attributes(planner: str, plan_version: int | None) -> dict[str, AttributeValue]:
    return drop_none(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_PLAN,
            sc.GEN_AI_AGENT_NAME: planner,
            sc.REGIMENT_PLAN_VERSION: plan_version,
        }
    )


def replan_attributes(
    planner: str | None, old_version: int, reason: str, *, capture: bool
) -> dict[str, AttributeValue]:
    """A replan's: planning, as the conventions' ``plan`` operation names it (task
    decomposition of the plan's unfinished tail), marked ``regiment.plan.replan``. The
    reason (user data) is kept, redacted, only with capture on, else its length."""
    attributes: dict[str, AttributeValue] = {
        sc.GEN_AI_OPERATION_NAME: sc.OPERATION_PLAN,
        sc.REGIMENT_PLAN_REPLAN: True,
        sc.REGIMENT_PLAN_OLD_VERSION: old_version,
    }
    if planner is not None:
        attributes[sc.GEN_AI_AGENT_NAME] = planner
    if capture:
        attributes[sc.REGIMENT_REPLAN_REASON] = redacted_cut(reason, _REASON_LIMIT)
    else:
        attributes[sc.REGIMENT_REPLAN_REASON_LENGTH] = len(reason)
    return attributes


_REASON_LIMIT = 512


def phase_attributes(
    name: str, attributes: Mapping[str, AttributeValue] | None
) -> dict[str, AttributeValue]:
    """A planner phase's: one that asks a model (``critique``, ``compress``,
    ``synthesize``) has its name as ``gen_ai.operation.name``, a custom value (none of the
    conventions' values names it); ``verify`` has none: it is a predicate, not a GenAI
    operation."""
    base: dict[str, AttributeValue] = {}
    if name != sc.SPAN_VERIFY:
        base[sc.GEN_AI_OPERATION_NAME] = name
    base.update(attributes or {})
    return base


def verify_attributes(
    step_id: str, check: str | None, plan_version: int | None
) -> dict[str, AttributeValue]:
    return drop_none(
        {
            sc.REGIMENT_STEP_ID: step_id,
            sc.REGIMENT_CHECK_NAME: check,
            sc.REGIMENT_PLAN_VERSION: plan_version,
        }
    )


def agent_attributes(
    agent_name: str,
    agent_id: str | None,
    run_id: str | None,
    step_id: str | None,
    plan_version: int | None,
    attempt: int | None,
) -> dict[str, AttributeValue]:
    # One dict built in place (no second pass to drop the unknowns): once per step.
    attributes: dict[str, AttributeValue] = {
        sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
        sc.GEN_AI_AGENT_NAME: agent_name,
    }
    # The conventions' gen_ai.agent.id is a hosted agent resource's stable id (not an
    # in-process agent's, nor its name again): only one the caller was given.
    if agent_id is not None:
        attributes[sc.GEN_AI_AGENT_ID] = agent_id
    if run_id is not None:
        attributes[sc.REGIMENT_RUN_ID] = run_id
    if step_id is not None:
        attributes[sc.REGIMENT_STEP_ID] = step_id
    if plan_version is not None:
        attributes[sc.REGIMENT_PLAN_VERSION] = plan_version
    if attempt is not None:
        attributes[sc.REGIMENT_STEP_ATTEMPT] = attempt
    return attributes


def run_attributes(
    team: str, run_id: str, goal: str, provider: str | None, session_id: str | None
) -> dict[str, AttributeValue]:
    """The root span's: of the goal only its length (it is user data)."""
    return drop_none(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: team,
            sc.GEN_AI_PROVIDER_NAME: provider,
            sc.GEN_AI_CONVERSATION_ID: session_id,
            sc.REGIMENT_RUN_ID: run_id,
            sc.REGIMENT_GOAL_LENGTH: len(goal),
        }
    )


def tool_attributes(
    tool_name: str, call_id: str, tool_type: str, agent_name: str | None, description: str | None
) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        sc.GEN_AI_OPERATION_NAME: sc.OPERATION_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: tool_name,
        sc.GEN_AI_TOOL_CALL_ID: call_id,
        sc.GEN_AI_TOOL_TYPE: tool_type,
    }
    if agent_name is not None:
        attributes[sc.GEN_AI_AGENT_NAME] = agent_name
    # The tool's own description, as the model is told it: the application's text, not a
    # user's, so it is kept with capture off too (cut: a docstring can be long).
    if description:
        attributes[sc.GEN_AI_TOOL_DESCRIPTION] = description[:_DESCRIPTION_LIMIT]
    return attributes


_DESCRIPTION_LIMIT = 1024
