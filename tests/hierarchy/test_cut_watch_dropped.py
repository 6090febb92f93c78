"""A planner-side call whose reply or failure waits for the planner's turn while the run
winds down is charged once, at what it reported.

The planner takes a call's reply (or failure) in a turn of its own; a wind-down (a
cancel, a failed flush) taken first supersedes the call (``CutWatch.cut``) and the reply,
its turn come, is dropped. A reply that came back was charged so; a FAILED one that said
what it spent (a refused reply, ``ModelRefused(usage=...)``; structured answers that never
validated) was not: its watch forgot the call as it failed, and the planner, winding down,
never took the failure that would have charged it. Nor was what its reply guards' log
held (their answered judges, a tripped reply): only a later reply the planner took
charged it, and a run that ended never had one.

No public hook holds a reply between its return and the planner's turn (the turn is held
only across the journal's flush, and the call's own intent waits on the same journal), so
these drive the run's ``CutWatch`` as ``PhaseCalls`` does, with a real model caller.
"""

from __future__ import annotations

import anyio
import pytest

from regiment.errors import ModelRefused
from regiment.hierarchy._cut_calls import CutWatch
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._spent import Spent
from regiment.hierarchy.guard._roles import GuardRole
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    Price,
    ScriptedModel,
    TextPart,
    Usage,
)
from regiment.telemetry import Telemetry

pytestmark = pytest.mark.anyio

SAID = Usage(input_tokens=10, output_tokens=5, micro_usd=15)
REQUEST = ModelRequest(messages=(Message.user("the answer, please"),))


def _caller() -> ModelCaller:
    model = ScriptedModel(lambda request: "x", price=Price(input=1.0, output=1.0))
    return ModelCaller(model, "synthesizer", Telemetry())


def _failed(watch: CutWatch) -> None:
    def refused() -> None:
        with watch.sent("synthesis", "synthesizer", _caller(), REQUEST):
            raise ModelRefused("refused", usage=SAID, model_calls=2)

    with pytest.raises(ModelRefused):
        refused()


async def test_a_failure_dropped_at_a_wind_down_is_charged_what_it_said() -> None:
    spent = Spent()
    watch = CutWatch(spent, "run r")
    _failed(watch)
    watch.cut()  # the wind-down's supersede, while the failure waits for the planner's turn
    watch.dropped()  # its turn come, the planner drops it: nothing more
    assert spent.model_calls == 2
    assert spent.by_role() == {"synthesizer": SAID}
    assert spent.estimated == Usage()  # what it reported: no estimate


async def test_a_failure_the_planner_takes_is_left_to_it() -> None:
    spent = Spent()
    watch = CutWatch(spent, "run r")
    _failed(watch)
    watch.accepted()  # the planner took it (it charges it: _failed_call)
    watch.dropped()
    watch.cut()  # the run's end after it
    assert spent.model_calls == 0


async def test_a_reply_waiting_for_its_turn_at_a_wind_down_is_charged_once() -> None:
    spent = Spent()
    watch = CutWatch(spent, "run r")
    with watch.sent("synthesis", "synthesizer", _caller(), REQUEST):
        await anyio.lowlevel.checkpoint()
        watch.answered(SAID, 1)
    watch.cut()  # superseded while it waits for the planner's turn
    watch.dropped()
    watch.cut()  # the run's stop after it
    assert spent.model_calls == 1
    assert spent.by_role() == {"synthesizer": SAID}
    assert spent.estimated == Usage()


async def test_what_its_guards_spent_is_charged_with_a_dropped_call_once() -> None:
    spent, log = Spent(), list[tuple[GuardRole, ModelResponse]]()
    watch = CutWatch(spent, "run r", log)
    judged = ModelResponse(
        parts=(TextPart(text="no"),), stop_reason="end_turn", usage=SAID, model="m"
    )

    def tripped() -> None:
        with watch.sent("synthesis", "synthesizer", _caller(), REQUEST):
            log.append(("synthesizer", judged))  # a judge's reply, and the tripped reply
            log.append(("synthesizer", judged))
            raise RuntimeError("tripped")  # GuardrailError says nothing spent: the log does

    with pytest.raises(RuntimeError):
        tripped()
    watch.cut()
    watch.dropped()
    assert spent.model_calls == 2
    assert spent.by_role() == {"synthesizer": SAID + SAID}
    assert log == []  # the planner's next look charges none of it again
