"""A plan step makes no envelope (issue #22): the step sent to an idle worker and its
report handed to an idle planner are offered to ``receive_message_now`` before the
runtime makes an envelope (a frozen struct, a message id, a copy of the headers: ~3k CPU
instructions each, two a step). Counted exactly by the interpreter's profiler over the
steps of a warmed-up team's run, both backends; a traced run's steps still carry the
run's trace context to their workers (``tests/telemetry`` reads the spans' parents)."""

from __future__ import annotations

from types import FrameType

import pytest

from regiment.actors import ActorRef
from regiment.actors._system import ActorSystem
from regiment.hierarchy.run._turns import TakesTurns
from regiment.hierarchy.workers._step_actor import StepActor

from .profiled import Matches
from .test_step_hand_in_cost import _counted

pytestmark = pytest.mark.anyio


def _called(code: object, caller: object = None) -> Matches:
    def matches(frame: FrameType, event: str, _: object) -> bool:
        back = frame.f_back
        return (
            event == "call"
            and frame.f_code is code
            and (caller is None or (back is not None and back.f_code is caller))
        )

    return matches


async def test_a_step_and_its_report_make_no_envelope() -> None:
    envelope = ActorSystem.envelope.__code__
    one, four = await _counted(_called(envelope), 1), await _counted(_called(envelope), 4)
    assert four - one == 0  # two a step before (the step, its report)


async def test_a_step_is_taken_by_its_worker_with_no_frame_between() -> None:
    # send_nowait -> the idle worker's receive_message_now, no envelope or cell between.
    taker = StepActor.receive_message_now.__code__
    assert await _counted(_called(taker, ActorRef.send_nowait.__code__), 3) == 3


async def test_a_report_is_taken_by_the_planner_with_no_frame_between() -> None:
    # send_here -> the idle planner's receive_message_now, no envelope or cell between.
    taker = TakesTurns.receive_message_now.__code__
    assert await _counted(_called(taker, ActorRef.send_here.__code__), 3) == 3
