"""The spans of the catalogue (``_catalogue``): each span regiment opens, described once."""

from __future__ import annotations

from typing import NamedTuple

from regiment.telemetry import _semconv as sc

__all__ = ("SPANS", "Entry")


class Entry(NamedTuple):
    """One name, what it means, and where it appears."""

    name: str
    description: str
    where: str = ""


SPANS = (
    Entry(
        "invoke_agent {team}",
        "a run: the root of the trace (kind INTERNAL); a resumed run's continues the run's "
        "trace and links to its first root span (`regiment.run.resume` on the span and the link), "
        "and to the span that resumed it when that one is in another trace "
        "(`regiment.run.resumed_by` on the link)",
        "parent: the caller's span (the service: a `traceparent` header on `POST /runs`); "
        "resumed: the run's first root span",
    ),
    Entry(
        "invoke_agent {worker}",
        "a worker doing one step",
        "parent: the run, through the envelope's trace context",
    ),
    Entry(
        "plan {planner}",
        "making the first plan, a new round's plan, or a replan's (replacing the plan's "
        "unfinished tail: `regiment.plan.replan`, `regiment.plan.old_version` and "
        "`new_version`): one span per reply; a reply that gave no valid plan (asked again) is "
        "ERROR, `error.type=invalid_plan`",
        "under the run",
    ),
    Entry(
        sc.SPAN_VERIFY,
        "one check of one step's output (`regiment.check.passed`; a check whose predicate "
        "raised: also ERROR, `error.type` its exception's type, an `exception` event)",
        "under the run",
    ),
    Entry(
        sc.SPAN_CRITIQUE,
        "the critic judging the finished plan (`regiment.critique.passed`)",
        "under the run",
    ),
    Entry(sc.SPAN_COMPRESS, "shrinking the carried context to a working memory", "under the run"),
    Entry(sc.SPAN_SYNTHESIZE, "writing the final answer", "under the run"),
    Entry(
        "chat {model}",
        "one model call (kind CLIENT); with the Anthropic SDK's tracing on, the SDK's `anthropic.messages.create` span instead",
        "under a phase or step",
    ),
    Entry("execute_tool {tool}", "one tool call (`_OTHER`: not the worker's)", "under the step"),
    Entry(
        "tools/call {tool}",
        "one MCP request (kind CLIENT, named by the MCP conventions with the server's name of "
        "the tool); the `traceparent` in its `_meta` names it (or, when the application "
        "installed a global provider, the MCP SDK's own CLIENT span inside it); a tool "
        "result marked `isError`: ERROR, `error.type=tool_error`; a lost connection: ERROR, "
        "`error.type` its exception's type; none when tracing is off",
        "in the MCP tool's `execute_tool` span (on a Ray replica too)",
    ),
    Entry(
        "regiment.mcp.start {server}",
        "an MCP server's session starting: the handshake and the first `tools/list` (the "
        "MCP SDK's own spans of them inside, when it traces); `regiment.mcp.tools` the tools "
        "it gave, `regiment.mcp.restart` the restarts before it; a server that did not "
        "answer in `start_timeout`: ERROR, `error.type`",
        "a trace of its own, at team start and at each restart (under the span current "
        "where the team started, if any)",
    ),
    Entry(
        sc.SPAN_GUARDRAIL,
        "one guardrail judging one subject (a guard that raised: ERROR, `error.type` its exception's type)",
        "a model request's or reply's: in the phase or step span the call is made in; "
        "a tool call's or result's: in its `execute_tool` span; a plan's or the answer's: "
        "under the run, after the `plan` (a replan's too) or `synthesize` span that made it",
    ),
    Entry(
        sc.SPAN_APPROVAL,
        "a tool call waiting for a decision: a human's on the approval desk, or an in-process approver's",
        "in the tool call's `execute_tool` span",
    ),
)
