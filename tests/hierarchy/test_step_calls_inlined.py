"""Five Python calls a plan step no longer makes (issue #22, the forty-first round): the
worker's step and its progress are made by C code (``StepJob``, ``StepProgress``: structs),
a fan-out reads the plan's outline made once a version, the usual model reply (one ASCII
text) is not handed to ``valid_response`` to find nothing to clean, and a runner reads
asyncio's clock (``time.monotonic``) with no ``BaseEventLoop.time`` frame around it;
and a planner-side model call (two a run) marks its log context with no ``log_context``.
Counted exactly by the interpreter's profiler over a warmed-up team's runs; what each cut
skips still happens where it matters (the tests below the counts)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from types import FrameType

import pytest

from regiment.errors import ConfigError, RunError
from regiment.hierarchy import Planner, RunContextFilter, Team, Worker
from regiment.hierarchy._log_context import log_context
from regiment.hierarchy._model_call import ModelCaller
from regiment.hierarchy._text import valid_response
from regiment.hierarchy.run._calls import PhaseCalls
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


# The planner's model calls: their log mark set and reset by C calls (was a log_context,
# three Python calls a call); records made in them still carry it, and none after them.

_planner_log = logging.getLogger("regiment.tests.planner_calls")


async def _marked_run(fail: bool) -> tuple[str, list[logging.LogRecord], list[logging.LogRecord]]:
    """A 1-step run whose planner-side calls (the plan, the answer) each log a record;
    with ``fail``, the answer's call raises. The run's id, the records made in its calls
    and those the caller made after it."""
    plan = json.dumps({"steps": [{"id": "s1", "description": "say hi"}]})

    def reply(request: ModelRequest) -> ModelResponse:
        _planner_log.warning("answering %s", request.role)
        if request.role == "synthesizer" and fail:
            raise RuntimeError("the answer's model broke")
        return text_response(plan if request.role == "planner" else "hi")

    model = ScriptedModel(reply)
    team = Team(
        name="marks",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="says hi", model=ScriptedModel(["hi"]))],
    )
    handler = _Kept()
    handler.addFilter(RunContextFilter())
    _planner_log.addHandler(handler)
    try:
        async with team.start() as running:
            if fail:
                with pytest.raises(RunError, match="synthesis model call failed") as raised:
                    await running.run("say hi")
                failed = raised.value.failed
                run_id = "" if failed is None else failed.run_id
            else:
                run_id = (await running.run("say hi")).run_id
            _planner_log.warning("after the run")
    finally:
        _planner_log.removeHandler(handler)
    return run_id, handler.records[:-1], handler.records[-1:]


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize("fail", [False, True], ids=["answered", "answer-failed"])
async def test_a_planner_call_s_records_carry_its_mark_and_none_after_it(fail: bool) -> None:
    run_id, inside, (after,) = await _marked_run(fail)
    assert [r.getMessage() for r in inside] == ["answering planner", "answering synthesizer"]
    for record in inside:
        marks = (record.__dict__["run_id"], record.__dict__["step_id"], record.__dict__["worker"])
        assert marks == (run_id, None, "planner")
    assert "run_id" not in after.__dict__  # the caller's own record: the mark was reset


async def test_a_planner_call_makes_no_log_context() -> None:
    # PhaseCalls._call entered a log_context (three Python calls) each call: 2 in a run
    # (the plan, the answer) on main.
    made = _code_called(log_context.__init__.__code__, PhaseCalls._call.__code__)
    assert await _counted(made, 4) == 0
