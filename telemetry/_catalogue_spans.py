"""The spans and events of the catalogue (``_catalogue``): each described once."""

from __future__ import annotations

from typing import NamedTuple

from regiment.telemetry import _semconv as sc

__all__ = ("EVENTS", "SPANS", "Entry")


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
        "(`regiment.run.resumed_by` on the link); a root span whose process died is ended by "
        "the resume that finishes the run, with its ids and start (`regiment.run.resumed` events)",
        "parent: the caller's span (the service: a `traceparent` header on `POST /runs`); "
        "resumed: the run's first root span (after a crash: the lost root's own parent)",
    ),
    Entry(
        "invoke_agent {worker}",
        "a worker doing one step; a journaled run picks its span id as it sends the step "
        "and journals it, so that a resume after a crash ends the span its process left "
        "open (`regiment.interrupted`) before the step runs again",
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


EVENTS = (
    Entry(sc.STALE_REPORT_EVENT, "a report of an old plan version was dropped", "run"),
    Entry(sc.CANCELLED_EVENT, "the span's work was cancelled", "any span"),
    Entry(
        sc.BUDGET_EXHAUSTED_EVENT,
        "a budget limit was reached: the run's (it ends), or a step's share of it "
        "(`regiment.step.id`: a tool call was refused and the run goes on)",
        "run",
    ),
    Entry(
        sc.REPLAYED_EVENT,
        "a resumed run replayed one of the step's model replies from the journal "
        "(it has no `chat` span: the model was not asked again)",
        "step",
    ),
    Entry(
        sc.EXCEPTION_EVENT,
        "an exception ended the span's work (a step's: also when it was raised in a span "
        "inside it, a `chat` span's say, which has its own)",
        "any span",
    ),
    Entry(sc.APPROVAL_REQUESTED_EVENT, "a tool call waits for approval", "tool"),
    Entry(sc.APPROVAL_DECIDED_EVENT, "the approver decided", "tool"),
    Entry(
        sc.RUN_RESUMED_EVENT,
        "a resume took the run over while this root span was open: its process had died "
        "(`regiment.run.resume`: which resume; the event's time: when it began); the "
        "resume that finishes the run ends the span, with its first process's ids and start",
        "run",
    ),
    Entry(
        sc.INTERRUPTED_EVENT,
        "its process died with the span open (its time: when the resume ended it); the step "
        "is run again, in a new span",
        "step, tool; a nested run",
    ),
)
