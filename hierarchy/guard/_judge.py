"""A guard's own model calls (LLM-as-judge): traced like every model call of the
run, and charged to the run's budget (to the step's, inside a step)."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import final

from regiment.hierarchy._model_call import ModelCaller
from regiment.models import Model, ModelRequest, ModelResponse
from regiment.telemetry import Telemetry

__all__ = ("Spend", "judge", "spending")


@final
@dataclass(slots=True)
class Spend:
    """The model calls the guards of one chain made."""

    telemetry: Telemetry
    responses: list[ModelResponse] = field(default_factory=list)


# Which chain a guard's call belongs to: set by ``run_chain`` around its guards
# (a context variable, so concurrent chains in one run never mix their spending).
_CURRENT: ContextVar[Spend | None] = ContextVar("regiment_guard_spend", default=None)


def spending() -> ContextVar[Spend | None]:
    return _CURRENT


async def judge(model: Model, request: ModelRequest) -> ModelResponse:
    """Call ``model`` from inside a guardrail (an LLM-as-judge).

    The call is a ``chat`` span of the run's trace, and its usage and the call
    itself count against the run's budget (the step's share, inside a step).
    Outside a guardrail it is a plain, untraced call.
    """
    spend = _CURRENT.get()
    if spend is None:
        return await model.complete(request)
    response = await ModelCaller(model, "guardrail", spend.telemetry).call(request)
    spend.responses.append(response)
    return response
