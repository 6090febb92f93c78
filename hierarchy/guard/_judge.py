"""A guard's own model calls (LLM-as-judge): traced like every model call of the
run, and charged to the run's budget (to the step's, inside a step)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import TypeAlias, final

from regiment.errors import BudgetExceeded, ModelError
from regiment.hierarchy._budget import BudgetLedger, BudgetLimit
from regiment.hierarchy._model_call import ModelCaller
from regiment.models import Model, ModelRequest, ModelResponse, Usage, estimate_tokens
from regiment.telemetry import Telemetry

__all__ = ("Purse", "Spend", "judge", "judging_within", "ledger_purse", "spending")

# Why a judge's call must not start: given its request and the calls the chain's
# guards made so far (not yet charged), the limit in the way and what is left.
Purse: TypeAlias = Callable[[ModelRequest, Sequence[ModelResponse]], tuple[BudgetLimit, str] | None]


@final
@dataclass(slots=True)
class Spend:
    """The model calls the guards of one chain made."""

    telemetry: Telemetry
    responses: list[ModelResponse] = field(default_factory=list)


# Which chain a guard's call belongs to: set by ``run_chain`` around its guards
# (a context variable, so concurrent chains in one run never mix their spending).
_CURRENT: ContextVar[Spend | None] = ContextVar("regiment_guard_spend", default=None)


# What the guards' calls may still spend: set around the tasks that run guard
# chains (a step's tool loop, the planner's calls and plan/answer checks).
_PURSE: ContextVar[Purse | None] = ContextVar("regiment_guard_purse", default=None)


def spending() -> ContextVar[Spend | None]:
    return _CURRENT


@final
class judging_within:  # lower case: used like the function it was, ``with judging_within(...)``
    """Hold the guards' model calls made in this block (and in tasks started in it)
    to ``purse``.

    A class, not ``@contextmanager``: every planner-side model call enters one, and a
    generator-based manager costs a generator and three calls more each time.
    """

    __slots__ = ("_purse", "_token")

    def __init__(self, purse: Purse | None) -> None:
        self._purse = purse
        self._token: Token[Purse | None] | None = None

    def __enter__(self) -> None:
        self._token = _PURSE.set(self._purse)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _PURSE.reset(self._token)


def ledger_purse(ledger: BudgetLedger, pending: int = 0) -> Purse:
    """The run's budget as a purse; ``pending`` model calls are in flight, not yet charged."""

    def left(
        request: ModelRequest, made: Sequence[ModelResponse]
    ) -> tuple[BudgetLimit, str] | None:
        spent = sum(r.usage.total_tokens for r in made)
        limit = ledger.exhausted(
            model_calls_needed=1 + pending + len(made),
            tokens_needed=estimate_tokens(request) + spent,
        )
        return None if limit is None else (limit, f"the run's {limit} budget has none left")

    return left


async def judge(model: Model, request: ModelRequest) -> ModelResponse:
    """Call ``model`` from inside a guardrail (an LLM-as-judge).

    The call is a ``chat`` span of the run's trace, and its usage and the call
    itself count against the run's budget (the step's share, inside a step).
    Outside a guardrail it is a plain, untraced call.

    A call that fails having spent tokens (a refused reply, ``ModelRefused``; a
    stream that broke) is charged all the same, and its error passes on.

    Raises:
        BudgetExceeded: the budget has nothing left for the call; the model is not
            called, and the guard trips with this reason unless it catches it.
    """
    spend = _CURRENT.get()
    if spend is None:
        return await model.complete(request)
    purse = _PURSE.get()
    refused = None if purse is None else purse(request, tuple(spend.responses))
    if refused is not None:
        limit, why = refused
        raise BudgetExceeded(
            f"the guardrail's judge call was not made: {why}; raise the budget, "
            "or let the guard decide without a model",
            limit=limit,
        )
    try:
        response = await ModelCaller(model, "guardrail", spend.telemetry).call(request)
    except ModelError as exc:  # a refused reply, a broken stream: billed all the same
        if exc.usage is not None:  # charged as replies: one model call each
            spend.responses.append(_failed(exc.usage))
            spend.responses.extend(_failed(Usage()) for _ in range(exc.model_calls - 1))
        raise
    spend.responses.append(response)
    return response


def _failed(usage: Usage) -> ModelResponse:
    """A failed judge call, as the reply the chain charges (``Checked.spent``)."""
    return ModelResponse(parts=(), stop_reason="error", usage=usage, model="")
