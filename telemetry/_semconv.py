"""Span names and attribute keys: the GenAI semantic conventions we follow, and our own.

The GenAI conventions live in their own repository
(``open-telemetry/semantic-conventions-genai``) and are still marked
*Development*, so we keep our own string constants instead of importing the
incubating (and partly deprecated) names from ``opentelemetry-semantic-conventions``.
Names here match the current registry; our own attributes use the
``regiment.`` prefix.

Span names:

=====================  ==========================  ======================
span                   name                        gen_ai.operation.name
=====================  ==========================  ======================
a run (root)           ``invoke_agent {team}``     ``invoke_agent``
a worker's step        ``invoke_agent {worker}``   ``invoke_agent``
planning, replanning   ``plan {planner}``          ``plan``
one model call         ``chat {model}``            ``chat``
one tool call          ``execute_tool {tool}``     ``execute_tool``
critique, ...          ``critique``, ...           ``critique``, ... (ours)
a check                ``verify``                  (none)
=====================  ==========================  ======================
"""

from __future__ import annotations

from typing import Final

__all__ = (
    "APPROVAL_DECIDED_EVENT",
    "APPROVAL_REQUESTED_EVENT",
    "BUDGET_EXHAUSTED_EVENT",
    "CANCELLED_EVENT",
    "EXCEPTION_EVENT",
    "ERROR_BUDGET_EXHAUSTED",
    "ERROR_INTERRUPTED",
    "ERROR_INVALID_PLAN",
    "ERROR_INVALID_VERDICT",
    "ERROR_ITERATION_LIMIT",
    "ERROR_OTHER",
    "ERROR_TIMEOUT",
    "ERROR_TYPE",
    "GEN_AI_AGENT_DESCRIPTION",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "GEN_AI_AGENT_ID",
    "GEN_AI_AGENT_NAME",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_INPUT_MESSAGES",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_OUTPUT_MESSAGES",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_REQUEST_MAX_TOKENS",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_REQUEST_STOP_SEQUENCES",
    "GEN_AI_OUTPUT_TYPE",
    "OUTPUT_TYPE_JSON",
    "GEN_AI_REQUEST_TEMPERATURE",
    "GEN_AI_REQUEST_TOP_P",
    "GEN_AI_RESPONSE_FINISH_REASONS",
    "GEN_AI_RESPONSE_ID",
    "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_SYSTEM_INSTRUCTIONS",
    "GEN_AI_TOOL_CALL_ARGUMENTS",
    "GEN_AI_TOOL_CALL_ID",
    "GEN_AI_TOOL_CALL_RESULT",
    "GEN_AI_TOOL_DESCRIPTION",
    "GEN_AI_TOOL_NAME",
    "GEN_AI_TOKEN_TYPE",
    "GEN_AI_TOOL_TYPE",
    "GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS",
    "GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS",
    "GEN_AI_USAGE_INPUT_TOKENS",
    "GEN_AI_USAGE_OUTPUT_TOKENS",
    "METRIC_OPERATION_DURATION",
    "METRIC_REPLANS",
    "METRIC_RUNS_ACTIVE",
    "METRIC_STALE_REPORTS",
    "METRIC_STEPS",
    "METRIC_TOKEN_USAGE",
    "METRIC_TOOL_DURATION",
    "OPERATION_CHAT",
    "OPERATION_EXECUTE_TOOL",
    "OPERATION_INVOKE_AGENT",
    "OPERATION_PLAN",
    "PROVIDER_ANTHROPIC",
    "REGIMENT_APPROVAL_DECISION",
    "REGIMENT_APPROVAL_OUTCOME",
    "REGIMENT_APPROVAL_REQUEST_ID",
    "REGIMENT_APPROVAL_WAIT",
    "REGIMENT_BUDGET_EXHAUSTED",
    "REGIMENT_BUDGET_LIMIT",
    "REGIMENT_CANCELLED",
    "REGIMENT_INTERRUPTED",
    "REGIMENT_CANCEL_REASON",
    "REGIMENT_CHECK_DETAIL",
    "REGIMENT_CHECK_NAME",
    "REGIMENT_CHECK_PASSED",
    "REGIMENT_COMPRESS_AFTER_TOKENS",
    "REGIMENT_COMPRESS_BEFORE_TOKENS",
    "REGIMENT_CRITIQUE_FEEDBACK",
    "REGIMENT_CRITIQUE_FEEDBACK_LENGTH",
    "REGIMENT_CRITIQUE_PASSED",
    "REGIMENT_GOAL_LENGTH",
    "REGIMENT_PLAN_NEW_VERSION",
    "REGIMENT_PLAN_OLD_VERSION",
    "REGIMENT_PLAN_REPLAN",
    "REGIMENT_PLAN_STEPS",
    "REGIMENT_PLAN_VERSION",
    "REGIMENT_PLAN_VERSIONS",
    "REGIMENT_GUARDRAIL_NAME",
    "REGIMENT_GUARDRAIL_OUTCOME",
    "REGIMENT_GUARDRAIL_REASON",
    "REGIMENT_GUARDRAIL_REASON_LENGTH",
    "REGIMENT_GUARDRAIL_SUBJECT",
    "REGIMENT_REPLAN_REASON",
    "REGIMENT_REPLAYED",
    "REGIMENT_REPLAN_REASON_LENGTH",
    "REGIMENT_ERROR_CODE",
    "REGIMENT_ERROR_MESSAGE_LENGTH",
    "REGIMENT_CHECK_DETAIL_LENGTH",
    "REGIMENT_REPORTS_STALE_DROPPED",
    "REGIMENT_REPORT_VERSION",
    "REGIMENT_ROUND",
    "REGIMENT_RUN_ID",
    "REGIMENT_RUN_RESUME",
    "REGIMENT_RUN_RESUMED_BY",
    "REGIMENT_RUN_STATUS",
    "REGIMENT_RUN_STEPS",
    "REGIMENT_STEP_ATTEMPT",
    "REGIMENT_STEP_ID",
    "REGIMENT_STEP_OUTCOME",
    "REGIMENT_TOOL_OUTCOME",
    "REGIMENT_USAGE_CACHE_READ_TOKENS",
    "REGIMENT_USAGE_CACHE_WRITE_TOKENS",
    "REGIMENT_USAGE_COST_USD",
    "REGIMENT_USAGE_INPUT_TOKENS",
    "REGIMENT_USAGE_MODEL_CALLS",
    "REGIMENT_USAGE_OUTPUT_TOKENS",
    "REGIMENT_USAGE_ESTIMATED",
    "REGIMENT_USAGE_TOOL_CALLS",
    "REGIMENT_WORKER",
    "SPAN_APPROVAL",
    "SPAN_COMPRESS",
    "SPAN_CRITIQUE",
    "SPAN_GUARDRAIL",
    "SPAN_SYNTHESIZE",
    "SPAN_VERIFY",
    "REPLAYED_EVENT",
    "RUN_RESUMED_EVENT",
    "INTERRUPTED_EVENT",
    "STALE_REPORT_EVENT",
    "TOOL_TYPE_FUNCTION",
)

# --- gen_ai.operation.name values -------------------------------------------
OPERATION_INVOKE_AGENT: Final = "invoke_agent"
OPERATION_CHAT: Final = "chat"
OPERATION_EXECUTE_TOOL: Final = "execute_tool"
OPERATION_PLAN: Final = "plan"

# --- GenAI attributes (always recorded) -------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_OUTPUT_TYPE: Final = "gen_ai.output.type"
OUTPUT_TYPE_JSON: Final = "json"  # gen_ai.output.type of a call for a structured answer
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
# The spec says input_tokens SHOULD include cached input; the cache counts are
# reported separately as well.
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION: Final = "gen_ai.agent.description"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
# The tool's own description (its docstring, or an MCP server's), as the model is told it:
# the application's text, not a user's, so it is recorded with capture off too.
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"

# error.type codes for failures that are not an exception (else: the exception's type)
ERROR_TIMEOUT: Final = "timeout"
ERROR_ITERATION_LIMIT: Final = "iteration_limit"
ERROR_BUDGET_EXHAUSTED: Final = "budget_exhausted"
ERROR_OTHER: Final = "_OTHER"
ERROR_INTERRUPTED: Final = "interrupted"  # its process died with it open: a resume ended it
ERROR_INVALID_PLAN: Final = "invalid_plan"  # a planner reply the run refused (asked again)
ERROR_INVALID_VERDICT: Final = "invalid_verdict"  # a critic reply that is no verdict

PROVIDER_ANTHROPIC: Final = "anthropic"
TOOL_TYPE_FUNCTION: Final = "function"

# --- GenAI content attributes (opt-in only) ---------------------------------
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# --- regiment attributes ----------------------------------------------------
REGIMENT_RUN_ID: Final = "regiment.run.id"
# Which resume of a journaled run this root span (and its link to the first root) is.
REGIMENT_RUN_RESUME: Final = "regiment.run.resume"
# On a resumed root's link to the span that resumed it (an HTTP request's, in another trace).
REGIMENT_RUN_RESUMED_BY: Final = "regiment.run.resumed_by"
REGIMENT_RUN_STATUS: Final = "regiment.run.status"
REGIMENT_RUN_STEPS: Final = "regiment.run.steps"
REGIMENT_GOAL_LENGTH: Final = "regiment.goal.length"
REGIMENT_ROUND: Final = "regiment.round"
REGIMENT_PLAN_VERSION: Final = "regiment.plan.version"
REGIMENT_PLAN_VERSIONS: Final = "regiment.plan.versions"
REGIMENT_PLAN_STEPS: Final = "regiment.plan.steps"
REGIMENT_PLAN_OLD_VERSION: Final = "regiment.plan.old_version"
# On a plan span that replaced the plan's unfinished tail (a replan is planning too: the
# conventions' `plan` operation and span name), so a search can tell it from a first plan.
REGIMENT_PLAN_REPLAN: Final = "regiment.plan.replan"
REGIMENT_PLAN_NEW_VERSION: Final = "regiment.plan.new_version"
REGIMENT_REPLAN_REASON: Final = "regiment.replan.reason"
REGIMENT_GUARDRAIL_NAME: Final = "regiment.guardrail.name"
REGIMENT_GUARDRAIL_SUBJECT: Final = "regiment.guardrail.subject"
REGIMENT_GUARDRAIL_OUTCOME: Final = "regiment.guardrail.outcome"
REGIMENT_GUARDRAIL_REASON: Final = "regiment.guardrail.reason"
REGIMENT_GUARDRAIL_REASON_LENGTH: Final = "regiment.guardrail.reason_length"
REGIMENT_REPLAN_REASON_LENGTH: Final = "regiment.replan.reason_length"
REGIMENT_ERROR_CODE: Final = "regiment.error.code"
REGIMENT_ERROR_MESSAGE_LENGTH: Final = "regiment.error.message_length"
REGIMENT_STEP_ID: Final = "regiment.step.id"
REGIMENT_STEP_ATTEMPT: Final = "regiment.step.attempt"
REGIMENT_STEP_OUTCOME: Final = "regiment.step.outcome"
REGIMENT_REPORT_VERSION: Final = "regiment.report.plan_version"
REGIMENT_REPORTS_STALE_DROPPED: Final = "regiment.reports.stale_dropped"
REGIMENT_CHECK_NAME: Final = "regiment.check.name"
REGIMENT_CHECK_PASSED: Final = "regiment.check.passed"
REGIMENT_CHECK_DETAIL: Final = "regiment.check.detail"
REGIMENT_CHECK_DETAIL_LENGTH: Final = "regiment.check.detail_length"
REGIMENT_CRITIQUE_PASSED: Final = "regiment.critique.passed"
REGIMENT_COMPRESS_BEFORE_TOKENS: Final = "regiment.compress.before_tokens"
REGIMENT_COMPRESS_AFTER_TOKENS: Final = "regiment.compress.after_tokens"
REGIMENT_CRITIQUE_FEEDBACK: Final = "regiment.critique.feedback"
REGIMENT_CRITIQUE_FEEDBACK_LENGTH: Final = "regiment.critique.feedback_length"
REGIMENT_TOOL_OUTCOME: Final = "regiment.tool.outcome"
REGIMENT_APPROVAL_OUTCOME: Final = "regiment.approval.outcome"
REGIMENT_APPROVAL_REQUEST_ID: Final = "regiment.approval.request_id"
REGIMENT_APPROVAL_WAIT: Final = "regiment.approval.wait_s"
REGIMENT_WORKER: Final = "regiment.worker"
REGIMENT_CANCELLED: Final = "regiment.cancelled"
REGIMENT_CANCEL_REASON: Final = "regiment.cancel.reason"
REGIMENT_INTERRUPTED: Final = "regiment.interrupted"
REGIMENT_BUDGET_EXHAUSTED: Final = "regiment.budget.exhausted"
REGIMENT_REPLAYED: Final = "regiment.replayed"
REGIMENT_BUDGET_LIMIT: Final = "regiment.budget.limit"
REGIMENT_USAGE_INPUT_TOKENS: Final = "regiment.usage.input_tokens"
REGIMENT_USAGE_OUTPUT_TOKENS: Final = "regiment.usage.output_tokens"
REGIMENT_USAGE_CACHE_READ_TOKENS: Final = "regiment.usage.cache_read_tokens"
REGIMENT_USAGE_CACHE_WRITE_TOKENS: Final = "regiment.usage.cache_write_tokens"
# No GenAI convention names a cost: ours, in US dollars at the models' given prices.
REGIMENT_USAGE_COST_USD: Final = "regiment.usage.cost_usd"
REGIMENT_USAGE_MODEL_CALLS: Final = "regiment.usage.model_calls"
REGIMENT_USAGE_TOOL_CALLS: Final = "regiment.usage.tool_calls"
# A failed call whose stream broke before it reported usage: its tokens are an estimate.
REGIMENT_USAGE_ESTIMATED: Final = "regiment.usage.estimated"

# --- metrics ------------------------------------------------------------------
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_STEPS: Final = "regiment.steps"
METRIC_REPLANS: Final = "regiment.replans"
METRIC_STALE_REPORTS: Final = "regiment.stale_reports"
METRIC_TOOL_DURATION: Final = "regiment.tool.duration"
METRIC_RUNS_ACTIVE: Final = "regiment.runs.active"

# --- span names without a subject, and event names --------------------------
SPAN_VERIFY: Final = "verify"
SPAN_CRITIQUE: Final = "critique"
SPAN_COMPRESS: Final = "compress"
SPAN_SYNTHESIZE: Final = "synthesize"
SPAN_GUARDRAIL: Final = "regiment.guardrail"
SPAN_APPROVAL: Final = "regiment.approval"
STALE_REPORT_EVENT: Final = "regiment.report.stale_dropped"
APPROVAL_REQUESTED_EVENT: Final = "regiment.approval.requested"
APPROVAL_DECIDED_EVENT: Final = "regiment.approval.decided"
REGIMENT_APPROVAL_DECISION: Final = "regiment.approval.decision"
EXCEPTION_EVENT: Final = "exception"
CANCELLED_EVENT: Final = "regiment.cancelled"
BUDGET_EXHAUSTED_EVENT: Final = "regiment.budget.exhausted"
REPLAYED_EVENT: Final = "regiment.replayed"
# On a root span its process never ended (it died), reopened by the resume: one per resume.
RUN_RESUMED_EVENT: Final = "regiment.run.resumed"
# On a span a killed process left open, ended by the resume (which runs its work again).
INTERRUPTED_EVENT: Final = "regiment.interrupted"
