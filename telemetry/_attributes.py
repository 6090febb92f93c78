"""Building the attribute sets of regiment's spans (kept apart from ``Telemetry``)."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.util.types import AttributeValue

from regiment.telemetry import _semconv as sc

__all__ = (
    "agent_attributes",
    "chat_attributes",
    "drop_none",
    "run_attributes",
    "server_attributes",
    "tool_attributes",
)


def drop_none(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    """The attributes whose value is known."""
    return {key: value for key, value in attributes.items() if value is not None}


def agent_attributes(
    agent_name: str,
    agent_id: str | None,
    run_id: str | None,
    step_id: str | None,
    plan_version: int | None,
    attempt: int | None,
) -> dict[str, AttributeValue]:
    return drop_none(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: agent_name,
            sc.GEN_AI_AGENT_ID: agent_id if agent_id is not None else agent_name,
            sc.REGIMENT_RUN_ID: run_id,
            sc.REGIMENT_STEP_ID: step_id,
            sc.REGIMENT_PLAN_VERSION: plan_version,
            sc.REGIMENT_STEP_ATTEMPT: attempt,
        }
    )


def run_attributes(
    team: str, run_id: str, goal: str, provider: str | None, session_id: str | None
) -> dict[str, AttributeValue]:
    """The root span's: of the goal only its length (it is user data)."""
    return drop_none(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: team,
            sc.GEN_AI_AGENT_ID: team,
            sc.GEN_AI_PROVIDER_NAME: provider,
            sc.GEN_AI_CONVERSATION_ID: session_id,
            sc.REGIMENT_RUN_ID: run_id,
            sc.REGIMENT_GOAL_LENGTH: len(goal),
        }
    )


def tool_attributes(
    tool_name: str, call_id: str, tool_type: str, agent_name: str | None
) -> dict[str, AttributeValue]:
    return drop_none(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: tool_name,
            sc.GEN_AI_TOOL_CALL_ID: call_id,
            sc.GEN_AI_TOOL_TYPE: tool_type,
            sc.GEN_AI_AGENT_NAME: agent_name,
        }
    )


def chat_attributes(
    model: str,
    provider: str,
    agent_name: str | None,
    max_tokens: int | None,
    temperature: float | None,
) -> dict[str, AttributeValue]:
    return drop_none(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT,
            sc.GEN_AI_PROVIDER_NAME: provider,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_AGENT_NAME: agent_name,
            sc.GEN_AI_REQUEST_MAX_TOKENS: max_tokens,
            sc.GEN_AI_REQUEST_TEMPERATURE: temperature,
        }
    )


def server_attributes(server: tuple[str, int | None] | None) -> dict[str, AttributeValue]:
    """``server.address`` and ``server.port`` of a model API, when known."""
    if server is None:
        return {}
    address, port = server
    return drop_none({sc.SERVER_ADDRESS: address, sc.SERVER_PORT: port})
