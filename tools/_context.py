"""What a tool call knows about the run it belongs to: :class:`RunContext`."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Generic, TypeVar, final, get_origin

__all__ = ("RunContext", "is_context_annotation")

DepsT = TypeVar("DepsT")


@final
@dataclass(frozen=True, kw_only=True)
class RunContext(Generic[DepsT]):
    """The run a tool call belongs to; a tool gets it by declaring a parameter of this type.

    The parameter is left out of the tool's JSON schema (the model never sees or
    sends it); the worker's tool loop fills it in::

        @tool
        async def issue_refund(order_id: str, ctx: RunContext[Db]) -> str:
            return await ctx.deps.refund(order_id, key=ctx.idempotency_key)

    Attributes:
        run_id: the run.
        step_id: the plan step making the call.
        worker: the worker making the call.
        plan_version: the plan version the step belongs to.
        call_id: the model's id for this call.
        idempotency_key: names the side effect: the tool's declared key when it has
            one (``idempotency_key=...``), else one derived from (run, plan version,
            step, call index). It is the same on every attempt and after a resume,
            so a tool can use it to deduplicate a call that ran before a crash.
        deps: what the caller passed as ``running.run(goal, deps=...)`` (a database
            handle, a user id); ``None`` if nothing was. Deps are not journaled:
            pass them again to ``resume``.
    """

    run_id: str
    step_id: str
    worker: str
    plan_version: int
    call_id: str
    idempotency_key: str
    deps: DepsT

    def __repr__(self) -> str:  # deps may hold secrets (a key, a database handle): its type only
        return (
            f"RunContext(run_id={self.run_id!r}, step_id={self.step_id!r}, worker={self.worker!r}, "
            f"call_id={self.call_id!r}, deps=<{type(self.deps).__name__}>)"
        )


def is_context_annotation(annotation: object) -> bool:
    """Whether a parameter annotation asks for the run's context."""
    if annotation is inspect.Parameter.empty:
        return False
    return annotation is RunContext or get_origin(annotation) is RunContext
