"""Five Python calls a plan step no longer makes (issue #22, the forty-first round): the
worker's step and its progress are made by C code (``StepJob``, ``StepProgress``: structs),
a fan-out reads the plan's outline made once a version, the usual model reply (one ASCII
text) is not handed to ``valid_response`` to find nothing to clean, and a runner reads
asyncio's clock (``time.monotonic``) with no ``BaseEventLoop.time`` frame around it.
Counted exactly by the interpreter's profiler over a warmed-up team's runs; what each cut
skips still happens where it matters (the tests below the counts)."""

from __future__ import annotations

import asyncio
import time
from types import FrameType

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._text import valid_response
from regiment.hierarchy.run._fan_out import reserve_fan_out
from regiment.hierarchy.run._versions import PlanVersions
from regiment.hierarchy.workers import _progress, _step_jobs
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, TextPart, text_response
from regiment.telemetry import Telemetry

from .profiled import Matches
from .test_step_hand_in_cost import _counted

pytestmark = pytest.mark.anyio

_ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])


def _code_called(code: object, caller: object = None) -> Matches:
    def matches(frame: FrameType, event: str, _: object) -> bool:
        back = frame.f_back
        return (
            event == "call"
            and frame.f_code is code
            and (caller is None or (back is not None and back.f_code is caller))
        )

    return matches


def _init_in(module: str) -> Matches:
    def matches(frame: FrameType, event: str, _: object) -> bool:
        code = frame.f_code
        return event == "call" and code.co_filename == module and code.co_name == "__init__"

    return matches


async def test_a_step_s_job_and_progress_are_made_with_no_python_call() -> None:
    # StepJob.__init__ and StepProgress.__init__ were a Python call a step each: 4 and 4
    # in a 4-step run on main.
    assert await _counted(_init_in(_step_jobs.__file__), 4) == 0
    assert await _counted(_init_in(_progress.__file__), 4) == 0


def test_each_progress_has_lists_of_its_own_and_is_itself_only() -> None:
    one, two = _progress.StepProgress(), _progress.StepProgress()
    one.outcomes.append(object())  # type: ignore[arg-type]
    assert two.outcomes == []
    assert two.guard_notes == []
    assert one.guard_notes is not two.guard_notes
    assert one != two  # by identity, as the plain class was
    assert len({one, two}) == 2


async def test_a_fan_out_reads_the_plan_s_outline_with_no_call() -> None:
    # PlanVersions.outline() was asked by every fan-out (one a step: 4 in a 4-step run on
    # main); made once a version, it is read as an attribute after the first.
    asked = _code_called(PlanVersions.outline.__code__, reserve_fan_out.__code__)
    assert await _counted(asked, 4) == 1


async def test_a_plain_reply_is_not_handed_to_valid_response() -> None:
    # The plan's reply, each step's and the answer's: 6 in a 4-step run on main.
    assert await _counted(_code_called(valid_response.__code__), 4) == 0


@_ASYNCIO_ONLY
async def test_a_runner_reads_asyncio_s_clock_with_no_frame_around_it() -> None:
    # The runner read BaseEventLoop.time for its HOLD check each step, and again after
    # each park or HOLD's turn: 5 to 7 in a 4-step run on main (a turn is timed).
    clock = vars(asyncio.BaseEventLoop)["time"].__code__
    assert await _counted(_code_called(clock, StepActor._steps.__code__), 4) == 0


def _caller() -> ModelCaller:
    return ModelCaller(ScriptedModel(["unused"]), "w", Telemetry())


_REQUEST = ModelRequest(system="s", messages=())


def test_a_plain_ascii_reply_is_kept_as_it_came() -> None:
    reply = text_response("plain words")
    assert _caller().answered(reply, _REQUEST) is reply


def test_a_reply_with_a_lone_surrogate_is_still_cleaned() -> None:
    for reply in (
        text_response("bad \ud800 half"),
        ModelResponse(
            parts=(TextPart(text="ok"), TextPart(text="x \udc00")),
            stop_reason="end_turn",
            model="m",
        ),
    ):
        answered = _caller().answered(reply, _REQUEST)
        texts = [p.text for p in answered.parts if isinstance(p, TextPart)]
        assert all("\ufffd" in t or t == "ok" for t in texts), texts
        assert "".join(texts).encode("utf-8")  # encodable now


def test_a_non_ascii_reply_that_is_valid_stays_the_same() -> None:
    reply = text_response("déjà vu ✓")
    assert _caller().answered(reply, _REQUEST) == reply


def test_a_reply_that_is_not_a_model_response_still_fails_clearly() -> None:
    with pytest.raises(ConfigError, match="ModelResponse"):
        _caller().answered("just a string", _REQUEST)  # type: ignore[arg-type]


@_ASYNCIO_ONLY
async def test_the_actor_clock_of_a_stock_asyncio_loop_is_time_monotonic() -> None:
    from regiment.actors._wakeup import loop_clock

    assert loop_clock() is time.monotonic
    loop = asyncio.get_running_loop()
    own = lambda: 42.0  # noqa: E731 - a loop with a clock of its own (uvloop, a test's)
    loop.time = own  # type: ignore[method-assign]
    try:
        assert loop_clock() is own
    finally:
        del loop.time
