"""Where a guard's judge calls are journaled and replayed from (``JudgeTape``), and a
judge call that failed having been sent (a refused reply, a broken stream): charged as
the live run charged it, journaled so that its intent is closed, and raised again to the
guard on a resume (``ModelCallFinished.failed``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, final

import msgspec
from opentelemetry import trace

from regiment.errors import (
    ModelAPIError,
    ModelConnectionError,
    ModelError,
    ModelRefused,
    ScriptExhausted,
)
from regiment.journal import ModelCallFinished
from regiment.models import ModelRequest, ModelResponse, Usage
from regiment.telemetry import semconv as sc

if TYPE_CHECKING:
    from regiment._json import JsonObject
    from regiment.hierarchy._model_call import ModelCaller
    from regiment.hierarchy.guard._judge import Spend

__all__ = ("JudgeTape", "charge_failed", "failure", "failed_reply", "raised_again")

_KINDS: dict[str, type[ModelError]] = {
    c.__name__: c for c in (ModelAPIError, ModelConnectionError, ModelRefused, ScriptExhausted)
}
_BASES = frozenset(_KINDS.values())
_CHAT = {sc.GEN_AI_OPERATION_NAME: sc.OPERATION_CHAT}  # what was replayed: a model reply


def failed_reply(usage: Usage) -> ModelResponse:
    """A failed judge call, as the reply the chain charges (``Checked.spent``)."""
    return ModelResponse(parts=(), stop_reason="error", usage=usage, model="")


def charge_failed(responses: list[ModelResponse], exc: ModelError) -> None:
    """Count the failed call ``exc`` in the chain's ``responses`` (charged as replies: one
    model call each), at what it reported spending (nothing reported: its tokens unknown,
    none charged, the call counted all the same)."""
    responses.append(failed_reply(Usage() if exc.usage is None else exc.usage))
    responses.extend(failed_reply(Usage()) for _ in range(exc.model_calls - 1))


def failure(exc: ModelError) -> tuple[ModelResponse, int, JsonObject]:
    """What journals the failed call ``exc`` (a judge's, or a worker's own): its reply (what
    it spent; nothing reported: no tokens), its model calls and ``ModelCallFinished.failed``."""
    # An error of a class of one's own (a provider's ModelAPIError subclass, say) is
    # journaled as the nearest class a resume can raise again, so the guard or the step
    # meets it as it did: a ModelRefused caught as such, a permanent ModelAPIError fatal.
    kind = next((c.__name__ for c in type(exc).__mro__ if c in _BASES), ModelError.__name__)
    calls = exc.model_calls  # counted whether or not it said what it spent
    failed: JsonObject = {"error": kind, "message": str(exc)}
    if isinstance(exc, ModelAPIError):  # what decides a step's failure: fatal, or replanned
        failed.update(status_code=exc.status_code, permanent=exc.permanent)
    if exc.usage_estimated:
        failed["estimated"] = True
    return failed_reply(exc.usage or Usage()), calls, failed


def raised_again(response: ModelResponse, calls: int, failed: JsonObject) -> ModelError:
    """The error a journaled failed call (``failure``) raised, to raise again."""
    kind, message = failed.get("error"), failed.get("message")
    exc = _KINDS.get(kind if isinstance(kind, str) else "", ModelError)(str(message or ""))
    if isinstance(exc, ModelAPIError):  # (older journals: what its message implies)
        status, permanent = failed.get("status_code"), failed.get("permanent")
        exc.status_code = status if isinstance(status, int) else None
        exc.permanent = permanent if isinstance(permanent, bool) else exc.permanent
    if calls > 0:
        exc.usage, exc.model_calls = response.usage, calls
        exc.usage_estimated = failed.get("estimated") is True
    return exc


@final
class JudgeTape:
    """Where the judge calls of one step (or of the planner side of one run) are
    journaled, and replayed from on a resume.

    A call's key is ``{prefix}guard/{digest}/{n}``: the digest of the request the guard
    made, and which time that request was made in this scope. So a resumed run's judge
    gets the reply its question had before the crash, whatever order concurrent guards
    ask in, and a question never asked before goes to the model.
    """

    __slots__ = ("_asked", "_begin", "_held", "_prefix", "_responses", "_seen", "_taken", "_write")

    def __init__(
        self,
        prefix: str,
        responses: Mapping[str, ModelResponse],
        write: Callable[[str, ModelResponse, int, JsonObject | None], Awaitable[None]],
        begin: Callable[[str, str, ModelCaller, ModelRequest], Awaitable[None]] | None = None,
        asked: Mapping[str, ModelCallFinished] | None = None,
        taken: set[str] | None = None,
    ) -> None:
        self._prefix = prefix
        self._taken = taken  # the keys a resume replayed (charged: ``run._unreplayed``)
        # A replayed reply's key is taken only once its chain's spending is charged
        # (``charged``: by the planner side's guard log, or by the step), by reply: a
        # chain cut before that leaves it to the step's report or the run's end to charge.
        self._held: dict[int, str] = {}
        self._responses = responses  # the resumed run's journaled replies (empty: a new run)
        self._asked = asked or {}  # those of them with more to say (a failed call's error)
        self._write = write
        self._begin = begin  # journals a call's intent (key, role) before it is sent
        self._seen: dict[str, int] = {}

    def key(self, request: ModelRequest) -> str:
        """The key of the next judge call made with ``request``."""
        import hashlib  # here: a run with no judge never loads it (it loads OpenSSL)

        digest = hashlib.sha256(msgspec.json.encode(request)).hexdigest()[:24]
        n = self._seen[digest] = self._seen.get(digest, 0) + 1
        return f"{self._prefix}guard/{digest}/{n}"

    def again(self, key: str, spend: Spend) -> ModelResponse | None:
        """The reply journaled for the call ``key`` before a resume, if any, charged again
        to ``spend`` (the resumed budget counts it); a failed call's error is raised again.
        """
        if (replayed := self._responses.get(key)) is None:
            return None
        self._held[id(replayed)] = key
        if spend.telemetry.tracing:  # no chat span (the model is not asked): the guard's says so
            trace.get_current_span().add_event(sc.REPLAYED_EVENT, _CHAT)
        if (failed := self.failed(key, replayed)) is not None:
            if failed.usage is not None:  # charged as the reply it is (``charged``)
                more = [failed_reply(Usage()) for _ in range(failed.model_calls - 1)]
                self._held.update((id(r), "") for r in more)  # (counted with its key)
                spend.responses += (replayed, *more)
            raise failed
        spend.responses.append(replayed)
        return replayed

    def charged(self, response: ModelResponse) -> None:
        """A chain's ``response`` is charged: if a replayed one, its key is taken."""
        if self._held and (key := self._held.pop(id(response), None)) and self._taken is not None:
            self._taken.add(key)

    def unreplayed(self, responses: Sequence[ModelResponse]) -> list[ModelResponse]:
        """``responses`` less the replayed ones not charged yet: a cut chain leaves those
        to the step's report or the run's end (their keys are not taken)."""
        held = self._held
        return [r for r in responses if id(r) not in held]

    def failed(self, key: str, response: ModelResponse) -> ModelError | None:
        """The error the call ``key`` (replayed as ``response``) failed with, if it did."""
        record = self._asked.get(key)
        if record is None or record.failed is None:
            return None
        return raised_again(response, record.calls, record.failed)

    async def begun(self, key: str, role: str, caller: ModelCaller, request: ModelRequest) -> None:
        if self._begin is not None:  # billed once sent: a resume charges it if unanswered
            await self._begin(key, role, caller, request)

    async def record(
        self, key: str, response: ModelResponse, calls: int = 1, failed: JsonObject | None = None
    ) -> None:
        """Journal the call ``key``'s reply (or, ``failed``, what it spent: ``failure``)."""
        await self._write(key, response, calls, failed)
