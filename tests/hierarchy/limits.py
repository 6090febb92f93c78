"""What the money and token budget tests share: a limit by name, what a run spent of it,
and a reply kept to ``max_tokens`` as a real model keeps it."""

from __future__ import annotations

import msgspec

from regiment.hierarchy import Budget, RunResult
from regiment.models import ModelRequest, ModelResponse, Usage, effective_settings, estimate_tokens


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
