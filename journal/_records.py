"""What a journal records: one closed, tagged union of frozen records.

Records carry the journal's own facts (keys, statuses, usage) as typed fields.
What the engine owns and may reshape (a plan, a step report, an event, the
final ``RunResult``) is carried as a JSON object the engine encodes with
``msgspec.to_builtins`` and decodes with ``msgspec.convert``: the journal never
imports the engine, so the arrow points one way (hierarchy -> journal).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal, TypeAlias

import msgspec

from regiment._json import JsonObject
from regiment.models import ModelResponse, Usage
from regiment.tools import ApprovalDecision, ApprovalRequest, ToolResult

__all__ = (
    "ApprovalDecided",
    "ApprovalRequested",
    "EventRecorded",
    "FinalStatus",
    "ModelCallFinished",
    "ModelCallStarted",
    "PlanVersion",
    "Record",
    "RunCreated",
    "RunFinished",
    "RunResumed",
    "StepDispatched",
    "StepReported",
    "TeamFile",
    "ToolCallFinished",
    "ToolCallStarted",
    "deps_hash",
)

FinalStatus: TypeAlias = Literal["completed", "partial", "failed", "cancelled"]


class _Base(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    run_id: str


class TeamFile(msgspec.Struct, frozen=True, kw_only=True):
    """Where a run's team came from, so ``regiment resume RUN_ID`` can build it again.

    Attributes:
        path: the team file, as an absolute path.
        app_dir: where the file's ``module:attribute`` paths were imported from
            (``regiment run --app-dir``, absolute), if anywhere in particular.
    """

    path: str
    app_dir: str | None = None


class RunCreated(_Base, frozen=True, kw_only=True, tag="run_created"):
    """A run was accepted; always the run's first record (sequence number 1).

    Attributes:
        team: the team's name.
        config_hash: a hash of the team's configuration; resume compares it.
        goal: the goal, verbatim.
        session: the session the run belongs to, if any.
        created_at: when the run was accepted (timezone-aware).
        trace: the W3C ``traceparent`` of the run's root span, when the run was
            traced (a resume continues that trace); ``None`` in older journals.
        trace_parent: the ``traceparent`` of that span's parent (a caller's span), if it
            had one: a resume after a crash ends the root span there.
        team_file: the team file the run was started from (``regiment run``
            records it); ``None`` for a team built in code, and in older journals.
        parent: for the run of a nested team (a ``TeamWorker``'s step), the run whose
            step it serves; ``None`` for a top-level run (see ``nested_run_id``).
        deps_hash: :func:`deps_hash` of the run's deps (never the deps: they may hold
            secrets), so a retried request can be told from another; ``None`` for deps that
            are not JSON data, and in older journals.
        config_parts: a short hash of each part of the team's configuration, by the
            part's key (``budget``, ``w:billing/tool:refund``): a resume under a changed
            team names the parts that changed; ``None`` in older journals.
    """

    team: str
    config_hash: str
    goal: str
    session: str | None = None
    created_at: datetime
    trace: str | None = None
    trace_parent: str | None = None
    team_file: TeamFile | None = None
    parent: str | None = None
    deps_hash: str | None = None
    config_parts: dict[str, str] | None = None


_JSON_DATA = (dict, list, str, int, float, bool)
_NO_DEPS = hashlib.sha256(b"null").hexdigest()


def deps_hash(deps: object) -> str | None:
    """The SHA-256 (hex) of ``deps``' canonical JSON (object keys sorted, no spaces), when
    they encode as JSON (``None``; a dict with string keys, a list, a string, a number or a
    bool, holding what msgspec encodes); ``None`` for anything else (a client, a connection
    pool): equal hashes, equal deps. What ``RunCreated.deps_hash`` holds."""
    if deps is None:  # (most runs: no encoding)
        return _NO_DEPS
    if not isinstance(deps, _JSON_DATA):
        return None
    try:
        encoded = msgspec.json.encode(deps, order="sorted")
    except (TypeError, ValueError, RecursionError):  # not JSON data inside: not recorded
        return None
    return hashlib.sha256(encoded).hexdigest()


class RunResumed(_Base, frozen=True, kw_only=True, tag="run_resumed"):
    """A process took the run over to finish it (``RunningTeam.resume``).

    Attributes:
        number: which resume this is (1 for the first).
        trace: the W3C ``traceparent`` of the resumed root span, when traced (the
            crashed process's own, when the resume ends that span: see ``Telemetry.run_span``).
        trace_parent: the ``traceparent`` of that span's parent, if it has one.
        resumed_at: when the resume began (timezone-aware).
    """

    number: int
    trace: str | None = None
    trace_parent: str | None = None
    resumed_at: datetime


class PlanVersion(_Base, frozen=True, kw_only=True, tag="plan_version"):
    """A plan version became current; ``plan`` is the engine's ``Plan`` as JSON."""

    version: int
    plan: JsonObject


class StepDispatched(_Base, frozen=True, kw_only=True, tag="step_dispatched"):
    """Intent: a step went to its worker.

    Attributes:
        span: the span id (16 hex digits) of the step's ``invoke_agent`` span, when the run
            is traced: a resume after a crash ends that span, which its process left open;
            ``None`` in older journals.
    """

    plan_version: int
    step_id: str
    worker: str
    attempt: int = 1
    span: str | None = None


class StepReported(_Base, frozen=True, kw_only=True, tag="step_reported"):
    """Result: a step's report reached the planner.

    Attributes:
        status: the report's status (``done``, ``failed``, ``cancelled``, ...).
        committed: whether the planner committed the step (current version, done, checked).
        output: the step's output text.
        report: the engine's whole ``StepReport`` as JSON, for resume and ``show``.
    """

    plan_version: int
    step_id: str
    worker: str
    attempt: int = 1
    status: str
    committed: bool
    output: str = ""
    report: JsonObject = msgspec.field(default_factory=dict)


class ToolCallStarted(_Base, frozen=True, kw_only=True, tag="tool_call_started"):
    """Intent: a tool call is about to run; append it durably before the call.

    Keyed by ``(run_id, plan_version, step_id, call_index)``. An intent without a
    ``ToolCallFinished`` after a crash means the call was in flight: run it again
    with the same ``idempotency_key`` so the tool can deduplicate. ``guardrails``: what
    the call's guards did to it before it ran (the engine's notes of their rewrites, as
    JSON), so a resume that runs it again without judging it still tells of them.
    ``span``: the span id (16 hex digits) of the call's ``execute_tool`` span, when traced:
    a resume after a crash ends that span, which its process left open (``None`` in older
    journals). A traced resume that runs the call again journals its intent again, the
    same but for ``span`` (its new span's): the last intent of a key is the call's.
    """

    plan_version: int
    step_id: str
    call_index: int
    tool: str
    call_id: str = ""
    arguments: JsonObject = msgspec.field(default_factory=dict)
    idempotency_key: str
    guardrails: list[JsonObject] = msgspec.field(default_factory=list)
    span: str | None = None


class ToolCallFinished(_Base, frozen=True, kw_only=True, tag="tool_call_finished"):
    """Result of the tool call with the same key; a resume replays it."""

    plan_version: int
    step_id: str
    call_index: int
    result: ToolResult


class ModelCallStarted(
    _Base, frozen=True, kw_only=True, tag="model_call_started", omit_defaults=True
):
    """Intent: a model call of a run under a spending budget is about to be sent; appended
    durably before it is, as the provider bills a call whether or not its reply comes back.

    A started call with no ``ModelCallFinished`` of the same ``call_key`` after it (the
    process died while it was in flight) is charged, when the run is resumed, at ``most``.

    Attributes:
        call_key: the key its response is journaled under (``ModelCallFinished.call_key``).
        role: whose call it is (a worker's name, ``planner``, ...), as in ``usage_by_role``.
        most: the most the call may spend: its estimated input, its ``max_tokens`` as
            output, and their cost at its model's price (the input at the dearest rate).
    """

    call_key: str
    role: str
    most: Usage


class ModelCallFinished(
    _Base, frozen=True, kw_only=True, tag="model_call_finished", omit_defaults=True
):
    """A model call's response (usage inside), keyed by a ``call_key`` stable across resumes.

    Attributes:
        calls: the model calls the response took: a synthesis asked again (an empty or
            invalid answer) is one response, its asks' usage summed; 1 in older journals.
        unpaid: a synthesis answer (empty, or not valid) that the run's budget could not
            pay to ask again for, so the run ended on that limit: the engine's
            ``{"limit": ..., "why": ...}``; ``None`` otherwise, and in older journals.
        failed: a worker's own call or a guard's judge call that failed once sent (a
            refused reply, a broken stream):
            ``{"error": <its ModelError class>, "message": ...}``; ``response`` holds
            what it reported spending, over ``calls`` (0: it reported nothing). It closes
            the call's intent, and a resume raises the same error again (to the step, or
            the guard) rather than asking; a ``ModelAPIError``'s also keeps its
            ``status_code`` and ``permanent``; ``None`` otherwise, and in older journals.
        role: whose call it was when neither its key nor an intent says: a planner-side
            guard's judge call, the role whose call it judged (``planner``, ``critic``,
            ``synthesizer``); ``None`` otherwise, and in older journals.
    """

    call_key: str
    response: ModelResponse
    calls: int = 1
    unpaid: JsonObject | None = None
    failed: JsonObject | None = None
    role: str | None = None


class EventRecorded(_Base, frozen=True, kw_only=True, tag="event"):
    """One event of the run, in order; ``event`` is the engine's event as JSON."""

    kind: str
    event: JsonObject


class ApprovalRequested(_Base, frozen=True, kw_only=True, tag="approval_requested"):
    """A tool call waits for a decision; the run lists as ``paused``."""

    approval_id: str
    plan_version: int
    step_id: str
    call_index: int
    request: ApprovalRequest


class ApprovalDecided(_Base, frozen=True, kw_only=True, tag="approval_decided"):
    """The decision on the pending approval with the same ``approval_id``."""

    approval_id: str
    decision: ApprovalDecision
    decided_by: str = ""


class RunFinished(_Base, frozen=True, kw_only=True, tag="run_finished"):
    """The run ended; no record follows it.

    Attributes:
        status: how it ended.
        answer: the answer (empty when it failed).
        error: what went wrong, when it failed.
        result: the engine's ``RunResult`` as JSON.
    """

    status: FinalStatus
    answer: str = ""
    error: str | None = None
    result: JsonObject = msgspec.field(default_factory=dict)


Record: TypeAlias = (
    RunCreated
    | RunResumed
    | PlanVersion
    | StepDispatched
    | StepReported
    | ToolCallStarted
    | ToolCallFinished
    | ModelCallStarted
    | ModelCallFinished
    | EventRecorded
    | ApprovalRequested
    | ApprovalDecided
    | RunFinished
)
