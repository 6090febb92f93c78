"""The exceptions regiment raises, branched by who has to react.

The tree::

    RegimentError                      root of everything regiment raises
    ├── ConfigError                    the programmer or the config file is wrong; fix the code
    │   └── HookFailed                 a ``Prompts`` hook of the user's raised or returned no text
    ├── ActorError                     the actor runtime
    │   ├── MailboxFull                send_nowait on a full mailbox
    │   ├── ActorStopped               sending to, or asking, an actor that has stopped
    │   ├── AskTimeout                 ask() got no reply in time (also a TimeoutError)
    │   ├── ActorFailed                an actor exceeded its restart limit (escalation)
    │   └── WorkerLost                 a worker's Ray replica died (process killed, node lost) mid-step
    │       └── ClusterLost            the whole Ray cluster went away: the run stops, resumable
    ├── ToolError                      a tool could not be built or called
    │   ├── ToolArgumentsInvalid       arguments did not validate against the schema
    │   └── RetryableToolError         raised by a tool body: this attempt failed, try again
    ├── ModelError                     a model call failed after the provider's own retries
    │   ├── ModelAPIError              the provider answered with an error status (``permanent``:
    │   │                              a bad key, no permission, an unknown model, an invalid request)
    │   ├── ModelConnectionError       the provider could not be reached
    │   ├── ModelRefused               the model declined to answer (a refusal, a content filter)
    │   └── ScriptExhausted            a ScriptedModel was called more times than scripted
    ├── RunError                       a run could not finish
    │   ├── PlanError                  no valid plan within the allowed attempts
    │   ├── StepFailed                 a step failed and no replan could recover it (``fatal``:
    │   │                              none was tried, as none could fix it)
    │   ├── BudgetExceeded             a budget limit was reached (when configured to raise)
    │   ├── GuardrailError             a guardrail tripped where the run or step cannot go on
    │   ├── OutputInvalid              the structured answer failed validation on every attempt
    │   └── RunCancelled               the run was cancelled by its caller
    ├── ApprovalError                  a decision on an approval request cannot be taken
    └── JournalError                   the run journal cannot be opened, read or written
        ├── LeaseHeld                  another owner's lease on the run is alive
        ├── LeaseLost                  a write carried a stale fencing token (a zombie owner)
        ├── UnknownRun                 the journal has no run with that id
        └── AlreadyFinished            a resume of a run that has already finished

Errors about something a *model* produced (bad tool arguments, an invented tool name, an
unparseable plan) are first handed back to the model as data; they only surface as
exceptions once the bounded number of attempts is used up.

``JournalError`` is its own branch, not a ``RunError``: the storage is broken (a corrupt file, a
database that is down, a disk that is full, a journal from a newer regiment), so an operator must
act, and ``except RunError`` around a run must not hide it. A run whose journal write fails ends
with the ``JournalError`` itself; it never continues unjournaled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from regiment.hierarchy import RunFailed
    from regiment.models import Usage

__all__ = (
    "ActorError",
    "AlreadyFinished",
    "ApprovalError",
    "ActorFailed",
    "ActorStopped",
    "AskTimeout",
    "BudgetExceeded",
    "ClusterLost",
    "ConfigError",
    "GuardrailError",
    "HookFailed",
    "JournalError",
    "LeaseHeld",
    "LeaseLost",
    "MailboxFull",
    "ModelAPIError",
    "ModelConnectionError",
    "ModelError",
    "ModelRefused",
    "OutputInvalid",
    "PlanError",
    "RegimentError",
    "RetryableToolError",
    "RunCancelled",
    "RunError",
    "ScriptExhausted",
    "StepFailed",
    "ToolArgumentsInvalid",
    "ToolError",
    "UnknownRun",
    "WorkerLost",
)


class RegimentError(Exception):
    """Root of every exception regiment raises."""


class ConfigError(RegimentError):
    """The programmer (or a config file) asked for something that cannot work."""


class ActorError(RegimentError):
    """A problem in the actor runtime."""


class MailboxFull(ActorError):
    """``send_nowait`` found the mailbox at capacity; use ``await send`` to wait."""


class ActorStopped(ActorError):
    """The target actor has stopped; the message went to the dead letters."""


class AskTimeout(ActorError, TimeoutError):
    """``ask`` did not get a reply in time."""


class ActorFailed(ActorError):
    """An actor failed more often than its restart policy allows."""


class WorkerLost(ActorError):
    """A worker's remote replica (a Ray actor) died while it ran a step: the step is retried once
    on another replica with the same step key; a second loss fails it with this as its cause."""


class ClusterLost(WorkerLost):
    """The whole Ray cluster went away mid-step: the run stops, unfinished when journaled."""


class ToolError(RegimentError):
    """A tool could not be defined or called.

    Attributes:
        fatal: the application's code for the tool is broken (its ``idempotency_key``
            function or ``requires_approval`` predicate raised, or returned the wrong
            thing), so the call fails the same way every time: a step it fails ends its
            run at once, with no replan.
    """

    def __init__(self, *args: object, fatal: bool = False) -> None:
        super().__init__(*args)
        self.fatal = fatal


class ToolArgumentsInvalid(ToolError):
    """Arguments given to a tool did not validate."""


class RetryableToolError(ToolError):
    """Raised inside a tool to say "this attempt failed, it is worth trying again".

    The tool's retry policy (``retries=``, ``backoff=``) decides how often; when the
    attempts are used up, the message of the last one goes back to the model.
    """


class ModelError(RegimentError):
    """A model call failed after the provider's own retries.

    Attributes:
        usage: the tokens the failed call spent (a refused reply; a stream that failed after
            it said them), an estimate of its input for a stream that broke before it said,
            else ``None``; a team charges them to the step's or run's usage and budget.
        usage_estimated: ``usage`` is such an estimate (``regiment.usage.estimated``).
        model_calls: the model calls that spent them.
    """

    usage: Usage | None = None
    usage_estimated: bool = False
    model_calls: int = 1


class ModelAPIError(ModelError):
    """The model provider answered with an error.

    Attributes:
        status_code: HTTP status, if there was a response.
        error_type: the provider's error type (for Anthropic e.g. ``invalid_request_error``).
        request_id: the provider's request id, for support tickets.
        permanent: the same call would be refused the same way every time, whatever
            the step asks: a bad key (401), no permission (403), an unknown model or
            endpoint (404), a request the API rejects as invalid (400, 422; not one
            that is only too long). A worker's step that fails with such an error
            ends its run at once, with no replan. By default, ``True`` for 401, 403
            and 404; the providers also set it for the invalid requests.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        permanent: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type
        self.request_id = request_id
        self.permanent = status_code in (401, 403, 404) if permanent is None else permanent


class ModelConnectionError(ModelError):
    """The model provider could not be reached (refused, reset, timed out)."""


class ModelRefused(ModelError):
    """The model declined to answer: its reply stopped as a refusal (Anthropic's
    ``refusal``) or was cut by the provider's content filter (``content_filter``).

    A team does not act on such a reply: a worker's step fails (the planner may
    replan), a planner-side call fails the run. What the reply cost is still
    charged: to the step's or the run's usage, its budget and its ``chat`` span.

    Attributes:
        usage: the tokens the refused reply spent (``None`` when not known), with
            those of the attempts before it when a structured answer was re-asked.
        model_calls: the model calls that spent them.
    """

    def __init__(self, message: str, *, usage: Usage | None = None, model_calls: int = 1) -> None:
        super().__init__(message)
        self.usage = usage
        self.model_calls = model_calls


class ScriptExhausted(ModelError):
    """A ScriptedModel was called more times than it has scripted responses."""


class RunError(RegimentError):
    """A run could not finish.

    Attributes:
        failed: the run's last event, ``RunFailed``, when the run ended with one:
            what it got to (plans, step reports, committed steps, usage), so a
            caller of ``run()`` loses none of it; ``None`` otherwise.
    """

    failed: RunFailed | None = None


class PlanError(RunError):
    """The planner did not produce a valid plan within the allowed attempts.

    Attributes:
        last_reply: the planner model's last reply text.
        problems: what was wrong with it.
    """

    def __init__(
        self, message: str, *, last_reply: str = "", problems: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.last_reply = last_reply
        self.problems = problems


class StepFailed(RunError):
    """A step failed and could not be recovered by a replan.

    Attributes:
        step_id: the failing step.
        worker: the worker it was assigned to.
        cause: a short description of why.
        fatal: no replan was tried, as none could fix the failure (the worker's
            model refused the call for good: see ``ModelAPIError.permanent``);
            otherwise the replans ran out.
    """

    def __init__(
        self, message: str, *, step_id: str, worker: str, cause: str, fatal: bool = False
    ) -> None:
        super().__init__(message)
        self.step_id, self.worker, self.cause, self.fatal = step_id, worker, cause, fatal


class BudgetExceeded(RunError):
    """A budget limit was reached and the run was configured to raise.

    Attributes:
        limit: which limit (``model_calls``, ``tool_calls``, ``tokens``, ...).
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class OutputInvalid(RunError):
    """The synthesizer's structured answer did not validate, on every attempt.

    Attributes:
        output_type: the qualified name of the pydantic model the answer must match.
        attempts: how many answers were asked for (the first and each re-ask).
        detail: the last validation error.
        usage: the tokens every attempt spent together (``None`` when not known);
            the run's usage and budget count them.
    """

    def __init__(
        self,
        message: str,
        *,
        output_type: str,
        attempts: int,
        detail: str,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.output_type = output_type
        self.attempts = attempts
        self.detail = detail
        self.usage = usage


class RunCancelled(RunError):
    """The run was cancelled by its caller."""


class ApprovalError(RegimentError):
    """A decision on an approval request cannot be taken: the request is unknown or
    already decided, or edited arguments do not validate (the request stays pending).

    Attributes:
        kind: ``unknown``, ``decided``, ``invalid`` (edited arguments),
            ``no_journal`` (a paused run, and nowhere to keep the decision),
            ``ended`` (its run finished, cancelled say, without a decision) or
            ``approver`` (the approver raised, or returned no decision: a step it fails
            ends its run at once, with no replan, as every call would fail alike).
    """

    def __init__(self, message: str, *, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


class JournalError(RegimentError):
    """The run journal could not be opened, read or written; the message names the file or database."""


class LeaseHeld(JournalError):
    """Another owner holds a live lease on the run; wait for it to finish or stop, then retry."""


class LeaseLost(JournalError):
    """The write carried a stale fencing token: another owner took the run over. The
    process holding the old lease is a zombie for that run and must stop working on it;
    nothing it wrote after the takeover was kept.

    Attributes:
        owner: the owner that holds the run now (``host:pid:stamp``), if another
            one took it over; ``None`` when the lease was released instead.
    """

    def __init__(self, message: str, *, owner: str | None = None) -> None:
        super().__init__(message)
        self.owner = owner


class UnknownRun(JournalError):
    """The journal has no run with that id (the journal itself works); ``regiment runs`` lists them."""


class AlreadyFinished(JournalError):
    """A resume of a run that has finished: nothing to resume; ``regiment show`` shows it.
    ``status``: how it finished (``completed``, ``failed``, ``cancelled``, ...)."""

    def __init__(self, message: str, *, status: str) -> None:
        super().__init__(message)
        self.status = status


class GuardrailError(RunError):
    """A guardrail tripped where the run (or the step) cannot go on.

    Attributes:
        guardrail: the guard's name.
        subject: what it judged (``model_request``, ``plan``, ``answer``, ...).
        reason: the guard's reason.
    """

    def __init__(self, message: str, *, guardrail: str, subject: str, reason: str) -> None:
        super().__init__(message)
        self.guardrail = guardrail
        self.subject = subject
        self.reason = reason


class HookFailed(ConfigError):
    """A ``Prompts`` method of the user's raised: the message names the class, the hook,
    what it raised and what to do; ``__cause__`` is what it raised. A step it built a
    prompt for fails with that message (no replan: every step would fail alike); a run,
    with :meth:`run_error`. Its span's ``error.type`` is ``regiment.errors.HookFailed``."""

    def run_error(self) -> RunError:
        """The run's error: this message, caused by what the hook raised."""
        error = RunError(str(self))
        error.__cause__ = self.__cause__
        return error
