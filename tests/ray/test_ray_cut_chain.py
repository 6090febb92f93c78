"""A guard chain on a Ray replica cut mid-way charges the judge calls that answered.

In-process, a cut chain's answered judges are charged by the chain as it is cut
(``answered_cut``, tests/hierarchy/test_cut_chain_judges.py). On a Ray replica the
chain's purse has no run to charge, but the replica tells each judge's reply to the
caller as it comes back (its step's journal channel, ``journaled`` always on a
replica), and the caller's conduit charges it to the step then: checked from outside,
the answered judge is counted once (a model call, at what it reported, no estimate) and
the held one at its most. This locks that: a replica that kept its judges' replies to
itself until its chain was done would count 3 model calls here, not 4.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Callable
from types import ModuleType

import pytest

from regiment.hierarchy import Budget, Planner, Ray, RunResult, Team, Worker
from regiment.models import ModelRequest, ScriptedModel

from ..hierarchy.cut_run import cancelled_once
from ..hierarchy.held_call import FREE, USD, api, until_held
from ..models.standin import StandIn
from ._guard_cut import REFUSAL, judged

__all__ = ("api",)

pytestmark = [pytest.mark.anyio, pytest.mark.ray, pytest.mark.timeout(180)]  # Ray starts processes


def _brain(request: ModelRequest) -> str:
    if request.role == "planner":
        return json.dumps({"steps": [{"id": "s1", "description": "draft", "worker": "w"}]})
    return "done"


async def _cut_on_a_replica(api: StandIn, build: Callable[[], Worker]) -> RunResult:
    """A run whose one step runs on a Ray replica (``build``'s worker), cancelled once the
    stand-in holds its second judge's call (90 s: a hang guard)."""
    worker = dataclasses.replace(build(), placement=Ray(build=build, num_cpus=0))
    team = Team(
        name="chained",
        planner=Planner(model=ScriptedModel(_brain, price=FREE)),
        workers=[worker],
        budget=Budget(usd=USD),
    )
    return await cancelled_once(team, functools.partial(until_held, api, 90))


async def test_a_ray_steps_cut_chain_charges_its_answered_judge(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="regiment.run")
    build = functools.partial(judged, api.base_url)
    result = await _cut_on_a_replica(api, build)
    assert result.model_calls == 4  # the plan, the step's reply, both judge calls
    estimated = result.estimated_usage  # only the held judge call is an estimate
    assert (estimated.input_tokens, estimated.output_tokens) == (10, 200)  # its most
    cut = [r.getMessage() for r in caplog.records if "was cut in flight" in r.getMessage()]
    assert len(cut) == 1, cut
    # the step's reply and the answered judge, at what they reported, beside the estimate
    spent = result.usage_by_role["w"]
    assert spent.output_tokens > estimated.output_tokens
    assert spent.micro_usd > estimated.micro_usd


async def test_a_ray_steps_refused_judge_is_charged_what_it_reported(
    ray_session: ModuleType, api: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """A first judge that refuses (``ModelRefused(usage=...)``) is journaled as answered
    on the replica, so the caller's conduit charges it at what it reported; it used to be
    left looking in flight and charged at its most as cut with the held one."""
    caplog.set_level(logging.INFO, logger="regiment.run")
    build = functools.partial(judged, api.base_url, refused=True)
    result = await _cut_on_a_replica(api, build)
    assert result.model_calls == 4  # the plan, the step's reply, both judge calls
    estimated = result.estimated_usage  # only the held judge call is an estimate
    assert (estimated.input_tokens, estimated.output_tokens) == (10, 200)
    cut = [r.getMessage() for r in caplog.records if "was cut in flight" in r.getMessage()]
    assert len(cut) == 1, cut
    assert "(10 input, 200 output)" in cut[0], cut  # the held one, not the refused one
    spent = result.usage_by_role["w"]  # the reply, the refusal as reported, the estimate
    assert spent.micro_usd > estimated.micro_usd + REFUSAL.micro_usd
