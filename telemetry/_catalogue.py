"""Every span, attribute, metric and event regiment emits, described once.

``docs/tracing.md`` is rendered from this catalogue (``make tracing-doc``, or
``python -m regiment.telemetry._catalogue docs/tracing.md``); a test fails when
the file and the catalogue differ, or when a name in ``_semconv`` is missing here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from regiment.telemetry import _semconv as sc
from regiment.telemetry._catalogue_spans import EVENTS, SPANS, Entry

__all__ = ("ATTRIBUTES", "EVENTS", "METRICS", "SPANS", "VALUES", "Entry", "render")


ATTRIBUTES = (
    Entry(
        sc.GEN_AI_OPERATION_NAME,
        "`invoke_agent`, `chat`, `execute_tool` or `plan` (the conventions' values: `plan` is "
        "their planning or task decomposition phase, its span `plan {agent}`: a first plan, a "
        "new round's and a replan's); `critique`, `compress` or `synthesize` (ours: a planner "
        "phase that asks a model, named as its span)",
        "GenAI spans: run, step, chat, tool, MCP client, phases (not `verify`: a check is a "
        "predicate, not a GenAI operation)",
    ),
    Entry(
        sc.GEN_AI_PROVIDER_NAME,
        "who serves the model (`anthropic`, `openai`, `scripted`, ...)",
        "run, step, chat",
    ),
    Entry(
        sc.GEN_AI_AGENT_NAME,
        "the team, worker or role (a phase's: the role that answers, as its `chat` span says)",
        "run, step, phases (not `verify`), chat, tool",
    ),
    Entry(
        sc.GEN_AI_AGENT_ID,
        "a hosted agent's stable id, only when one is given (`Telemetry.agent_span(agent_id=)`): "
        "the conventions keep it for an agent resource's provider-assigned id, so a run's or "
        "step's in-process agent has none (its name is `gen_ai.agent.name`)",
        "step (given one)",
    ),
    Entry(sc.GEN_AI_AGENT_DESCRIPTION, "the worker's description", "step"),
    Entry(sc.GEN_AI_CONVERSATION_ID, "the run's session, when it has one", "run"),
    Entry(sc.GEN_AI_REQUEST_MODEL, "the model asked for", "chat"),
    Entry(sc.GEN_AI_REQUEST_MAX_TOKENS, "the reply's token limit", "chat"),
    Entry(sc.GEN_AI_REQUEST_TEMPERATURE, "the sampling temperature, when set", "chat"),
    Entry(sc.GEN_AI_REQUEST_TOP_P, "the nucleus-sampling cut-off, when set", "chat"),
    Entry(sc.GEN_AI_REQUEST_STOP_SEQUENCES, "the stop sequences, when set", "chat"),
    Entry(
        sc.GEN_AI_OUTPUT_TYPE,
        "`json` when the call asks for a structured answer (`Team(output_type=...)`)",
        "chat",
    ),
    Entry(sc.GEN_AI_RESPONSE_MODEL, "the model that answered", "chat"),
    Entry(sc.GEN_AI_RESPONSE_ID, "the provider's id of the reply", "chat"),
    Entry(sc.GEN_AI_RESPONSE_FINISH_REASONS, "why the model stopped (the provider's word)", "chat"),
    Entry(sc.GEN_AI_USAGE_INPUT_TOKENS, "every input token, cached ones included", "chat"),
    Entry(sc.GEN_AI_USAGE_OUTPUT_TOKENS, "generated tokens", "chat"),
    Entry(
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, "input tokens read from the prompt cache", "chat"
    ),
    Entry(
        sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        "input tokens written to the prompt cache (the Anthropic SDK's own span, with its "
        "tracing on, names them `gen_ai.usage.cache_write.input_tokens`)",
        "chat",
    ),
    Entry(
        sc.GEN_AI_TOOL_NAME,
        "the tool (an MCP client span: the server's name of it; `_OTHER`: not the worker's)",
        "tool, MCP client, approval; approval events",
    ),
    Entry(sc.GEN_AI_TOOL_CALL_ID, "the model's id for the call", "tool; approval events"),
    Entry(
        sc.GEN_AI_TOOL_DESCRIPTION,
        "the tool's description, as the model is told it (its docstring or `description=`, "
        "an MCP server's listing), up to 1,024 characters; the application's text, not a "
        "user's, so also with capture off; none on `_OTHER`",
        "tool",
    ),
    Entry(sc.GEN_AI_TOOL_TYPE, "`function`", "tool"),
    Entry(sc.GEN_AI_TOKEN_TYPE, "`input` or `output`", "metric `gen_ai.client.token.usage`"),
    Entry(sc.SERVER_ADDRESS, "the model API's (or MCP server's) host", "chat, tool, MCP client"),
    Entry(sc.SERVER_PORT, "its port", "chat, tool, MCP client"),
    Entry(
        sc.ERROR_TYPE,
        "the exception's type, or a code listed under values",
        "any span marked ERROR",
    ),
    Entry(sc.GEN_AI_INPUT_MESSAGES, "capture on: the messages sent, as GenAI JSON", "chat"),
    Entry(sc.GEN_AI_OUTPUT_MESSAGES, "capture on: the reply, as GenAI JSON", "chat"),
    Entry(sc.GEN_AI_SYSTEM_INSTRUCTIONS, "capture on: the system prompt, as GenAI JSON", "chat"),
    Entry(sc.GEN_AI_TOOL_CALL_ARGUMENTS, "capture on: the arguments (JSON)", "tool"),
    Entry(sc.GEN_AI_TOOL_CALL_RESULT, "capture on: what the tool returned", "tool"),
    Entry(sc.REGIMENT_RUN_ID, "the run's id", "run, step"),
    Entry(sc.REGIMENT_RUN_STATUS, "how the run ended", "run"),
    Entry(
        sc.REGIMENT_RUN_RESUME,
        "which resume of a journaled run this is (1 for the first)",
        "resumed run; its link to the first root",
    ),
    Entry(
        sc.REGIMENT_RUN_RESUMED_BY,
        "`true`: this link goes to the span that resumed the run (a request's)",
        "a resumed run's link",
    ),
    Entry(sc.REGIMENT_RUN_STEPS, "step reports the run received", "run"),
    Entry(sc.REGIMENT_GOAL_LENGTH, "the goal's length (never its text)", "run"),
    Entry(sc.REGIMENT_ROUND, "the critique round", "plan, critique"),
    Entry(
        sc.REGIMENT_PLAN_VERSION, "the plan version in effect", "plan, step, verify; stale event"
    ),
    Entry(sc.REGIMENT_PLAN_VERSIONS, "plan versions the run went through", "run"),
    Entry(
        sc.REGIMENT_PLAN_STEPS,
        "steps of the plan the call's reply gave (a replan's kept steps too), as read, "
        "before any plan guardrail judges it; absent when the reply gave no valid plan",
        "plan (a replan's too)",
    ),
    Entry(
        sc.REGIMENT_PLAN_REPLAN,
        "`true`: this `plan` span replaced the plan's unfinished tail (a replan); absent on a "
        "first plan and a new round's",
        "plan (a replan's)",
    ),
    Entry(sc.REGIMENT_PLAN_OLD_VERSION, "the version replaced", "plan (a replan's)"),
    Entry(sc.REGIMENT_PLAN_NEW_VERSION, "the version made", "plan (a replan's)"),
    Entry(sc.REGIMENT_REPLAN_REASON, "capture on: why the plan was replaced", "plan (a replan's)"),
    Entry(sc.REGIMENT_GUARDRAIL_NAME, "the guardrail's name", "guardrail"),
    Entry(
        sc.REGIMENT_GUARDRAIL_SUBJECT,
        "what it judged: `model_request`, `model_reply`, `plan`, `tool_call`, `tool_result`, `answer`",
        "guardrail",
    ),
    Entry(sc.REGIMENT_GUARDRAIL_OUTCOME, "`pass`, `rewrite` or `trip`", "guardrail"),
    Entry(sc.REGIMENT_GUARDRAIL_REASON, "capture on: why it tripped", "guardrail"),
    Entry(
        sc.REGIMENT_GUARDRAIL_REASON_LENGTH, "capture off: the trip reason's length", "guardrail"
    ),
    Entry(
        sc.REGIMENT_REPLAN_REASON_LENGTH, "capture off: the reason's length", "plan (a replan's)"
    ),
    Entry(
        sc.REGIMENT_ERROR_CODE,
        "a stable code of the failure (no message text)",
        "spans marked ERROR by an exception; exception event",
    ),
    Entry(
        sc.REGIMENT_ERROR_MESSAGE_LENGTH,
        "capture off: the error message's length",
        "spans marked ERROR; exception event",
    ),
    Entry(sc.REGIMENT_STEP_ID, "the plan step", "step, verify; stale event"),
    Entry(sc.REGIMENT_STEP_ATTEMPT, "the attempt number", "step"),
    Entry(
        sc.REGIMENT_STEP_OUTCOME,
        "the step's status (`done`, `failed`, ...); `awaiting_approval` for a step its run "
        "paused while a tool call of it waited for a decision (not `regiment.cancelled`: "
        "it was not called off)",
        "step; metric `regiment.steps`",
    ),
    Entry(sc.REGIMENT_REPORT_VERSION, "the dropped report's plan version", "stale event"),
    Entry(sc.REGIMENT_REPORTS_STALE_DROPPED, "stale reports dropped", "run"),
    Entry(sc.REGIMENT_CHECK_NAME, "the check", "verify"),
    Entry(sc.REGIMENT_CHECK_PASSED, "its verdict", "verify"),
    Entry(sc.REGIMENT_CHECK_DETAIL, "capture on: its explanation", "verify"),
    Entry(sc.REGIMENT_CHECK_DETAIL_LENGTH, "capture off: the explanation's length", "verify"),
    Entry(
        sc.REGIMENT_CRITIQUE_PASSED,
        "the critic's verdict on the round (absent: the reply was no verdict, see "
        "`invalid_verdict`)",
        "critique",
    ),
    Entry(
        sc.REGIMENT_COMPRESS_BEFORE_TOKENS,
        "the carried context's tokens before (an estimate, as the threshold counts them)",
        "compress",
    ),
    Entry(sc.REGIMENT_COMPRESS_AFTER_TOKENS, "its tokens after, from the memory", "compress"),
    Entry(sc.REGIMENT_CRITIQUE_FEEDBACK, "capture on: what the critic found missing", "critique"),
    Entry(sc.REGIMENT_CRITIQUE_FEEDBACK_LENGTH, "capture off: the feedback's length", "critique"),
    Entry(
        sc.REGIMENT_TOOL_OUTCOME,
        "`ok` or the failure's code/type; `awaiting_approval` for a call whose run paused "
        "(no `regiment.cancelled`: it was not called off) or was cancelled (with "
        "`regiment.cancelled`) while it waited for a decision: it never ran; `cut_off` or "
        "`budget_exhausted` (also its `error.type`) for a call not run: its reply was cut "
        "at max_tokens, or its step's share of tool calls was used up",
        "tool; metric `regiment.tool.duration`",
    ),
    Entry(
        sc.REGIMENT_APPROVAL_DECISION,
        "`approve`, `deny`, ...; none on a wait its run's pause ended (it waits on, for a "
        "resume; not `regiment.cancelled`)",
        "approval decided event, approval",
    ),
    Entry(
        sc.REGIMENT_APPROVAL_OUTCOME, "an approval's outcome (shown by the console view)", "tool"
    ),
    Entry(
        sc.REGIMENT_BUDGET_EXHAUSTED,
        "the `Budget` limit that ended the run (`model_calls`, `tool_calls`, `tokens`, ...), "
        "when one did (its status is then `partial`, or it failed with `BudgetExceeded`)",
        "run",
    ),
    Entry(
        sc.REGIMENT_REPLAYED,
        "a resumed run did not redo this: the model reply or tool result is the journaled "
        "one, replayed (no `chat` span inside; the tool did not run again)",
        "plan, critique, compress, synthesize, tool",
    ),
    Entry(sc.REGIMENT_BUDGET_LIMIT, "the `Budget` limit reached", "budget exhausted event"),
    Entry(sc.REGIMENT_APPROVAL_REQUEST_ID, "the pending request's id", "approval"),
    Entry(sc.REGIMENT_APPROVAL_WAIT, "seconds the call waited for the decision", "approval"),
    Entry(sc.REGIMENT_WORKER, "the worker whose call waits", "approval"),
    Entry(
        sc.REGIMENT_CANCELLED,
        "the work was cancelled (status stays unset; no `exception` event)",
        "any span (a step's: also when its planner cancelled it, e.g. by a replan; not the "
        "spans a pause ended: a paused run's, nested ones' included, wait for a decision)",
    ),
    Entry(
        sc.REGIMENT_INTERRUPTED,
        "`true`: the span's process died with it open; the resume that took the run over "
        "ended it (status ERROR, `error.type=interrupted`) and ran its work again",
        "step, tool (a nested run's root: its own resume ends it)",
    ),
    Entry(
        sc.REGIMENT_CANCEL_REASON,
        "who called the step off: `plan vN is being replaced` (a replan), `the run is ending` "
        "(cancelled, or ended partial), `the run failed`, `the run is pausing until its "
        "approvals are decided` (a step that was not itself waiting), `the worker is stopping`",
        "a step's `regiment.cancelled` event",
    ),
    Entry(sc.REGIMENT_USAGE_INPUT_TOKENS, "uncached input tokens of the whole run", "run"),
    Entry(sc.REGIMENT_USAGE_OUTPUT_TOKENS, "output tokens of the whole run", "run"),
    Entry(sc.REGIMENT_USAGE_CACHE_READ_TOKENS, "cache-read tokens of the whole run", "run"),
    Entry(sc.REGIMENT_USAGE_CACHE_WRITE_TOKENS, "cache-write tokens of the whole run", "run"),
    Entry(
        sc.REGIMENT_USAGE_COST_USD,
        "what the call (on a run: the whole run) cost in US dollars at its models' `Price`; "
        "only when priced (no GenAI convention names a cost)",
        "chat, run",
    ),
    Entry(sc.REGIMENT_USAGE_MODEL_CALLS, "model calls of the whole run", "run"),
    Entry(sc.REGIMENT_USAGE_TOOL_CALLS, "tool calls of the whole run", "run"),
    Entry(
        sc.REGIMENT_USAGE_ESTIMATED,
        "`true`: the call's stream broke before it reported its usage, so its "
        "`gen_ai.usage.*` are an estimate of its input tokens",
        "chat (a failed call)",
    ),
    Entry("mcp.method.name", "`tools/call`", "tool (MCP tools), MCP client"),
    Entry(
        "mcp.protocol.version", "the MCP protocol version agreed", "tool (MCP tools), MCP client"
    ),
    Entry("regiment.mcp.server", "the MCP server's name", "tool (MCP tools), MCP client"),
    Entry("network.transport", "`pipe` (stdio) or `tcp`", "tool (MCP tools), MCP client"),
    Entry(
        "mcp.session.id",
        "the session id an MCP server over HTTP gave (its `Mcp-Session-Id`)",
        "tool (MCP tools over HTTP), MCP client",
    ),
    Entry(
        "regiment.mcp.tools", "the tools the server gave (`include`/`exclude` applied)", "MCP start"
    ),
    Entry("regiment.mcp.restart", "restarts of the server before this session", "MCP start"),
    Entry("network.protocol.name", "`http`", "tool and MCP client (over HTTP)"),
    Entry("network.protocol.version", "the HTTP version (`1.1`)", "tool, MCP client (HTTP)"),
    Entry("jsonrpc.request.id", "the `tools/call` request's JSON-RPC id", "MCP client"),
    Entry(
        "rpc.response.status_code",
        "the JSON-RPC error code the server answered with (`error.type` is the same)",
        "MCP client (a call answered with an error)",
    ),
    Entry("exception.type", "the exception's type", "exception and cancelled events"),
    Entry("exception.message", "capture on: the message (redacted)", "exception event"),
    Entry("exception.stacktrace", "capture on: its last 8,192 characters", "exception event"),
)

METRICS = (
    Entry(
        sc.METRIC_TOKEN_USAGE,
        "histogram `{token}`: tokens per model call",
        "by `gen_ai.token.type`, operation, provider, model, server",
    ),
    Entry(
        sc.METRIC_OPERATION_DURATION,
        "histogram `s`: model call duration",
        "by operation, provider, model, server; `error.type` on failure",
    ),
    Entry(
        sc.METRIC_STEPS,
        "counter `{step}`: steps ended (a step its run paused: `awaiting_approval`)",
        "by `gen_ai.agent.name`, `regiment.step.outcome`",
    ),
    Entry(
        sc.METRIC_REPLANS, "counter `{replan}`: plans replaced", "by `gen_ai.agent.name` (the team)"
    ),
    Entry(sc.METRIC_STALE_REPORTS, "counter `{report}`: old-version reports dropped", ""),
    Entry(
        sc.METRIC_TOOL_DURATION,
        "histogram `s`: tool call duration",
        "by `gen_ai.tool.name`, `regiment.tool.outcome`",
    ),
    Entry(
        sc.METRIC_RUNS_ACTIVE,
        "up-down counter `{run}`: runs under way",
        "by `gen_ai.agent.name` (the team)",
    ),
)


VALUES = (
    Entry(sc.OPERATION_INVOKE_AGENT, "`gen_ai.operation.name` of a run or step"),
    Entry(sc.OPERATION_PLAN, "`gen_ai.operation.name` of planning (a replan's too)"),
    Entry(sc.SPAN_CRITIQUE, "`gen_ai.operation.name` of the critic's judgement"),
    Entry(sc.SPAN_COMPRESS, "`gen_ai.operation.name` of compressing the context"),
    Entry(sc.SPAN_SYNTHESIZE, "`gen_ai.operation.name` of writing the answer"),
    Entry(sc.OPERATION_CHAT, "`gen_ai.operation.name` of a model call"),
    Entry(sc.OPERATION_EXECUTE_TOOL, "`gen_ai.operation.name` of a tool call"),
    Entry(sc.PROVIDER_ANTHROPIC, "`gen_ai.provider.name` of Claude"),
    Entry(sc.OUTPUT_TYPE_JSON, "`gen_ai.output.type` of a call for a structured answer"),
    Entry(sc.TOOL_TYPE_FUNCTION, "`gen_ai.tool.type` of a Python tool"),
    Entry(sc.ERROR_TIMEOUT, "`error.type`: a step or tool call ran out of time"),
    Entry(sc.ERROR_ITERATION_LIMIT, "`error.type`: a step used all its model calls"),
    Entry(sc.ERROR_BUDGET_EXHAUSTED, "`error.type`: a step's budget share ran out"),
    Entry(
        sc.ERROR_INVALID_PLAN,
        "`error.type`: the run refused this planner reply (no valid plan) and asked again, "
        "or failed once out of attempts; the problems are the status text with capture on",
    ),
    Entry(
        sc.ERROR_INVALID_VERDICT,
        "`error.type`: the critic's reply was no verdict; it is asked again (the last "
        "attempt's is taken as passed)",
    ),
    Entry(sc.ERROR_OTHER, "`error.type`: a failure of no known class"),
    Entry(
        sc.ERROR_INTERRUPTED,
        "`error.type`: the span's process died with it open (SIGKILL, a crash); the resume "
        "ended it, with its ids and start, and ran its work again",
    ),
)

_SECTIONS = (
    ("Spans", ("span", "what it is", "where"), SPANS),
    ("Attributes", ("attribute", "meaning", "on"), ATTRIBUTES),
    ("Metrics", ("metric", "kind, unit: what", "attributes"), METRICS),
    ("Events", ("event", "meaning", "on"), EVENTS),
    ("Values", ("value", "meaning", ""), VALUES),
)

_HEADER = """# What regiment emits

Generated from `telemetry/_catalogue.py` (names from `telemetry/_semconv.py`);
do not edit by hand: run `make tracing-doc`. Names follow the OpenTelemetry
GenAI semantic conventions; ours start with `regiment.`. Content ("capture on")
is recorded only with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`
or `Telemetry(capture_content=True)`.
"""


def render() -> str:
    """The Markdown of ``docs/tracing.md``."""
    out = [_HEADER]
    for title, columns, entries in _SECTIONS:
        heads = [c for c in columns if c]
        out += [f"## {title}", "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        for entry in entries:
            cells = [f"`{entry.name}`", entry.description, entry.where][: len(heads)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if target is None:
        sys.stdout.write(render())
    else:
        target.write_text(render(), encoding="utf-8")
