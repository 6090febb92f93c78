"""A Ray worker whose reply guards ask two judges in turn: the first's (a scripted model
on the replica) answers, the second's (Claude on the test's stand-in Messages API) is held
until the run's cancel cuts the step (``test_ray_cut_chain``); built on the replicas
from :func:`judged`, by this module's name."""

from __future__ import annotations

import contextlib

from regiment.errors import ModelRefused
from regiment.hierarchy import Worker
from regiment.hierarchy.guard import Outcome, Pass, ReplySubject, judge
from regiment.models import Message, ModelRequest, Price, ScriptedModel, Usage

from ..hierarchy.held_call import held_model

__all__ = ("judged",)

PRICE = Price(input=1.0, output=1.0)
REFUSAL = Usage(input_tokens=11, output_tokens=2, micro_usd=13)  # a refusal's report


def _refusing(request: ModelRequest) -> str:
    raise ModelRefused("refused", usage=REFUSAL)


def judged(base_url: str, *, refused: bool = False) -> Worker:
    """The Ray worker: it drafts; its first judge answers (``refused``: refuses, reporting
    ``REFUSAL``, and the guard lets the reply pass), its second is held (the second's
    model is built in its check: a model client cannot be pickled)."""
    quick = ScriptedModel(_refusing if refused else lambda request: "fine", price=PRICE)

    async def first(subject: ReplySubject) -> Outcome:
        with contextlib.suppress(ModelRefused):
            await judge(quick, ModelRequest(messages=(Message.user("is this fine?"),)))
        return Pass()

    async def second(subject: ReplySubject) -> Outcome:
        await judge(held_model(base_url), ModelRequest(messages=(Message.user("and this?"),)))
        return Pass()

    model = ScriptedModel(lambda request: "drafted", price=PRICE)
    return Worker(name="w", description="drafts", model=model, guardrails=[first, second])
