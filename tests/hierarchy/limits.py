"""What the money and token budget tests share: a limit by name, what a run spent of it,
a reply kept to ``max_tokens`` as a real model keeps it; and the cancelled-tail plan
(a step ``s0`` whose check never passes beside ``SIBLINGS`` slow digs, replaced by ``r1``)
of the tests where a replan's cancelled steps still hold their shares."""

from __future__ import annotations

import json

import msgspec

from regiment.hierarchy import Budget, RunResult, StepReport
from regiment.models import (
    ModelRequest,
    ModelResponse,
    Price,
    Usage,
    effective_settings,
    estimate_tokens,
)

WHOLE = Price(input=1.0, output=2.0)  # whole micro-dollars a token
SIBLINGS = 7
PLAN = json.dumps(
    {
        "steps": [
            {"id": "s0", "description": "quick look", "check": "never"},
            *({"id": f"s{i}", "description": f"slow dig {i}"} for i in range(1, SIBLINGS + 1)),
        ]
    }
)
REPLAN = json.dumps({"steps": [{"id": "r1", "description": "quick fix"}]})


def never(report: StepReport) -> bool:
    """The check s0 never passes: its failure replans the tail."""
    return False


def budget_of(limit: str, amount: int) -> Budget:
    """A budget of ``amount`` tokens, or micro-dollars for ``limit == "usd"``."""
    return Budget(usd=amount / 1_000_000) if limit == "usd" else Budget(tokens=amount)


def spent_of(result: RunResult, limit: str) -> int:
    """What ``result`` spent of ``limit``: micro-dollars or tokens."""
    return result.usage.micro_usd if limit == "usd" else result.usage.total_tokens


def kept_to_max_tokens(request: ModelRequest, response: ModelResponse) -> ModelResponse:
    """``response`` cut to the request's ``max_tokens`` (stop reason ``max_tokens`` when
    cut), with the usage an honest provider reports: the request's estimated input and
    what was written."""
    room = effective_settings(None, request).max_tokens or request.max_tokens
    wants = estimate_tokens(response)
    written = wants if room is None else min(room, wants)
    usage = Usage(input_tokens=estimate_tokens(request), output_tokens=written)
    stop = response.stop_reason if written == wants else "max_tokens"
    return msgspec.structs.replace(response, usage=usage, stop_reason=stop)
