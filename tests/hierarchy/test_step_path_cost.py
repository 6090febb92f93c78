"""What a plan step pays for beyond its hops (issue #22): in a run with no journal,
spans, metrics or approvals, a step marks its log context with no Python call, the
fan-out that sends it makes no comprehension frame, and its report asks for no pause
check and no metric count. Counted exactly by the interpreter's profiler over the
steps of a warmed-up team's run; the mark itself still reaches a record made in a
step (``tests/models/test_retry_log_context.py`` and the test below)."""

from __future__ import annotations

import logging
import time
from types import FrameType

import pytest

from regiment.actors._cell import Cell
from regiment.hierarchy import Budget, Check, Planner, RunContextFilter, Team, Worker
from regiment.hierarchy._allowance import over_allowance
from regiment.hierarchy._budget import BudgetLedger, Share
from regiment.hierarchy._in_flight import step_cut
from regiment.hierarchy._live_events import live_sink
from regiment.hierarchy._log_context import log_context
from regiment.hierarchy._spent import Spent
from regiment.hierarchy.plan._plan import Plan
from regiment.hierarchy.run._actor import PlannerActor
from regiment.hierarchy.run._book import RunBook
from regiment.hierarchy.run._dispatch import Dispatcher
from regiment.hierarchy.run._fan_out import reserve_fan_out
from regiment.hierarchy.run._messages import StartRun
from regiment.hierarchy.run._pausing import PausesForApprovals
from regiment.hierarchy.run._turns import TakesTurns
from regiment.hierarchy.run._verify import Verifier
from regiment.hierarchy.run._versions import PlanVersions
from regiment.hierarchy.workers import _empty_reply, _loop, _step_actor
from regiment.hierarchy.workers._progress import StepProgress
from regiment.hierarchy.workers._share import within_allowance
from regiment.hierarchy.workers._step_actor import StepActor
from regiment.models import ModelRequest, ModelResponse, ScriptedModel, ToolResultPart, Usage
from regiment.telemetry import Telemetry

from .brains import Brain, plan_json
from .profiled import CallCounter, Matches

pytestmark = pytest.mark.anyio

_FAN_OUT = reserve_fan_out.__code__.co_filename
_STEP_ACTOR = StepActor._outcome.__code__.co_filename
_STEPS = 3
_EMPTY_REPLY = _empty_reply.__file__
_FIRST = _loop._first_message.__code__  # opening()'s, for the planner's estimates
_log = logging.getLogger("regiment.tests.step_path")


async def _work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
    _log.warning("working on %s", description)
    return f"did {description}"


async def _counted(matches: Matches, budget: Budget | None = None, *, checked: bool = False) -> int:
    """How many calls ``matches`` accepts in one run of a ``_STEPS``-step sequential plan
    (under ``budget``, if given; ``checked``: every step has the check ``has_text``)."""
    steps = [
        {"id": f"s{i}", "description": f"part {i}", "depends_on": [f"s{i - 1}"] if i > 1 else []}
        | ({"check": "has_text"} if checked else {})
        for i in range(1, _STEPS + 1)
    ]
    brain = Brain([plan_json(*steps)] * 2, work=_work)
    model = ScriptedModel(brain)
    team = Team(
        name="steps",
        planner=Planner(model=model),
        workers=[Worker(name="w", description="does parts", model=model)],
        budget=budget or Budget(),
        checks={"has_text": Check(description="has text", predicate=lambda r: bool(r.output))},
    )
    counter = CallCounter(matches)
    async with team.start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do the parts")
    assert result.status == "completed"
    assert [s.step_id for s in result.steps] == [f"s{i}" for i in range(1, _STEPS + 1)]
    return counter.count


def _code_called(*codes: object) -> Matches:
    def matches(frame: FrameType, event: str, _: object) -> bool:
        return event == "call" and frame.f_code in codes

    return matches


async def test_a_step_marks_its_log_context_with_no_python_call() -> None:
    # Entering and leaving a log_context was three Python calls a step.
    marks = (log_context.__init__, log_context.__enter__, log_context.__exit__)
    codes = tuple(m.__code__ for m in marks)

    def from_a_step(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code in codes
            and caller is not None
            and caller.f_code.co_filename == _STEP_ACTOR
        )

    assert await _counted(from_a_step) == 0


async def test_an_untraced_step_is_awaited_with_no_frame_between() -> None:
    # _run_step only opens the step's span; untraced, the runner awaits the step itself.
    assert await _counted(_code_called(StepActor._run_step.__code__)) == 0


async def test_a_fan_out_makes_no_comprehension_frame() -> None:
    # Without a token budget the step contexts are made as the steps are sent.
    def comprehension(frame: FrameType, event: str, _: object) -> bool:
        code = frame.f_code
        return event == "call" and code.co_filename == _FAN_OUT and code.co_name.startswith("<")

    assert await _counted(comprehension) == 0


async def test_a_report_with_no_approval_pending_asks_for_no_pause_check() -> None:
    assert await _counted(_code_called(PausesForApprovals._pause_if_stalled.__code__)) == 0


async def test_a_report_is_taken_by_the_planners_handle_now_and_no_turn_here() -> None:
    # The run's StartRun and each step's report are handled there, as plain calls (the
    # report took a turn through receive_here, a coroutine and its context's runner, and
    # before that was offered to _handle_now for nothing, every step).
    assert await _counted(_code_called(PlannerActor._handle_now.__code__)) == 1 + _STEPS
    assert await _counted(_code_called(TakesTurns.receive_here.__code__)) == 0


async def test_a_run_with_no_journal_records_its_changes_with_no_frame_between() -> None:
    # PlannerActor._record only forwarded to RunBook.apply: three frames a step.
    assert await _counted(_code_called(PlannerActor._record.__code__)) == 0
    assert await _counted(_code_called(RunBook.apply.__code__)) >= 3 * _STEPS


# A step taken by its worker with no frame between: test_step_envelopes.py.


async def test_a_step_sent_to_a_waiting_worker_asks_no_idle_property() -> None:
    # The worker's task waits on its mailbox: that attribute answers, with no call of
    # Cell.idle (which a report to the planner, an actor with no task, still asks, as
    # does each run's StartRun to its planner, sent the same way: not counted).
    idle = vars(Cell)["idle"].fget.__code__  # the property's getter

    def asked_for_a_step(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code is idle
            and caller is not None
            and caller.f_code is Cell.deliver_nowait.__code__
            and type(caller.f_locals["envelope"].message) is not StartRun
        )

    assert await _counted(asked_for_a_step) == 0


async def test_a_dispatch_that_sent_steps_asks_for_no_running_ids() -> None:
    # A step just sent is in flight, so the plan cannot be done: only the last report
    # (nothing left to send) looks at what still runs, besides the plan's indexing.
    assert await _counted(_code_called(Dispatcher.running_ids.__code__)) == 2  # was 5


async def test_a_step_of_a_run_nobody_streams_looks_for_no_live_sink() -> None:
    # Once a run for the planner's calls (PhaseCalls); it was once more every step.
    assert await _counted(_code_called(live_sink.__code__)) == 1


async def test_a_report_with_no_metrics_is_not_counted() -> None:
    assert await _counted(_code_called(StepActor._count.__code__)) == 0


async def test_a_record_made_in_a_step_still_carries_its_mark(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.handler.addFilter(RunContextFilter())
    with caplog.at_level(logging.WARNING, logger=_log.name):
        assert await _counted(lambda *_: False) == 0
    marked = [
        (r.__dict__["step_id"], r.__dict__["worker"])
        for r in caplog.records
        if r.name == _log.name and r.getMessage() == "working on part 2"
    ]
    assert marked == [("s2", "w")] * 2  # the warm-up run's and the counted run's


_LEDGER = (BudgetLedger.split, BudgetLedger.reserve, BudgetLedger.release)


async def test_a_run_with_no_limit_pays_nothing_for_its_budget() -> None:
    # The fan-out split nothing and reserved the cap's shared allowance through two
    # calls, the report released a reservation nobody held, and each model call went
    # through four calls to learn that a step may make its loop's model calls.
    ledger = _code_called(*(f.__code__ for f in _LEDGER))
    # Once a run: its ledger's first reservation makes the cap's allowance.
    assert await _counted(ledger) == 1  # was 3 a step (9)
    assert await _counted(_code_called(within_allowance.__code__)) == 0  # was 1 a call


async def test_a_model_call_limit_the_steps_caps_fit_in_checks_no_call() -> None:
    # Each step's allowance is its iteration cap (8): its loop cannot go past it.
    budget = Budget(model_calls=1_000)
    assert await _counted(_code_called(within_allowance.__code__), budget) == 0


async def test_a_model_call_limit_below_the_cap_is_checked_before_each_call() -> None:
    # After the plan's call, with one kept back for synthesis, each step may have at
    # most 5 of the 7 calls, fewer than its loop's 8: its one model call is checked.
    budget = Budget(model_calls=7)
    assert await _counted(_code_called(within_allowance.__code__), budget) == _STEPS


async def test_a_token_limit_checks_each_call_with_one_frame_between() -> None:
    # is_limited once a step, then within_allowance asked _out_of_share, which asked
    # _out_of_allowance, which asked over_allowance: five calls a one-call step, two now
    # (within_allowance and over_allowance; a top-up is asked for only when short).
    files = (within_allowance.__code__.co_filename, over_allowance.__code__.co_filename)

    def checks(frame: FrameType, event: str, _: object) -> bool:
        return event == "call" and frame.f_code.co_filename in files

    assert await _counted(checks, Budget(tokens=1_000_000)) == 2 * _STEPS  # was 5 a step


async def test_a_fan_out_makes_shares_only_for_the_steps_it_sends() -> None:
    # A 3-step sequential plan sends one step at a time; each fan-out split what is
    # left in as many shares as steps are pending, twice with a token limit (the fit,
    # then the reservation): 3+3, 2+2, 1+1 shares; now one and one.
    made = _code_called(Share.__new__.__code__)
    assert await _counted(made, Budget(tokens=1_000_000)) == 2 * _STEPS  # was 12
    assert await _counted(made, Budget(tool_calls=1_000)) == _STEPS  # was 6


async def test_a_reply_is_charged_in_one_call() -> None:
    # Spending.charge charged the role and called BudgetLedger.charge for the totals,
    # which asked Usage.whole_input_tokens: three calls a model reply, one now (Spent).
    charges = _code_called(Spent.charge.__code__)
    assert await _counted(charges) == _STEPS + 2  # the steps', the plan's and the answer's
    whole = vars(Usage)["whole_input_tokens"].fget.__code__
    assert await _counted(_code_called(whole)) == 0


async def test_a_done_step_with_no_check_is_committed_without_the_verifier() -> None:
    judged = _code_called(Verifier.judge.__code__)
    assert await _counted(judged) == 0  # was one a step
    # A step with a check still goes through it (and its check runs).
    assert await _counted(judged, checked=True) == _STEPS


async def test_an_answered_step_is_reported_by_its_loop() -> None:
    # answered() only asked whether the answer had text; the loop asks that itself.
    # The step's first message is made where the step begins (no _first_message frame).
    loop = _loop.__file__

    def helpers(frame: FrameType, event: str, _: object) -> bool:
        code = frame.f_code
        return event == "call" and (
            code.co_filename == _EMPTY_REPLY or (code.co_filename == loop and code is _FIRST)
        )

    assert await _counted(helpers) == 0  # was two a step


async def test_a_workers_reply_is_read_in_one_pass() -> None:
    # StepProgress.took read ModelResponse.text and the loop ModelResponse.tool_calls:
    # two property calls a reply; took reads both in one pass over the parts.
    getters = {vars(ModelResponse)[name].fget.__code__ for name in ("text", "tool_calls")}
    worker_files = {_loop.__file__, StepProgress.took.__code__.co_filename}

    def read_by_the_worker(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code in getters
            and caller is not None
            and caller.f_code.co_filename in worker_files
        )

    assert await _counted(read_by_the_worker) == 0  # was 2 a step


async def test_a_steps_carried_outputs_make_no_comprehension_frame() -> None:
    versions = PlanVersions.carried_outputs.__code__

    def comprehension(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code.co_name.startswith("<")
            and caller is not None
            and caller.f_code is versions
        )

    assert await _counted(comprehension) == 0  # was one a step with a dependency
    # (and it is asked: by each step with a dependency; s1 has none, so no call, #22)
    assert await _counted(_code_called(versions)) == _STEPS - 1


async def test_a_report_to_the_dormant_planner_asks_no_idle_property() -> None:
    # deliver_here (a report to the planner, an actor with no task) asked Cell.idle.
    idle = vars(Cell)["idle"].fget.__code__

    def asked_for_a_report(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code is idle
            and caller is not None
            and caller.f_code is Cell.deliver_here.__code__
        )

    assert await _counted(asked_for_a_report) == 0  # was one a step


async def test_a_step_nobody_cut_asks_its_scope_nothing() -> None:
    # The runner asked its scope's cancel_called after every step (an anyio property,
    # on either backend); only a cut, which sets job.stop first, cancels it.
    steps = StepActor._steps.__code__

    def asked(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code.co_name == "cancel_called"
            and caller is not None
            and caller.f_code is steps
        )

    assert await _counted(asked) == 0  # was one a step


async def test_a_plans_outline_is_made_with_no_frame_a_step() -> None:
    # Plan.outline made each step's line in _outline_line, from a list comprehension.
    outline = Plan.outline.__code__

    def below_the_outline(frame: FrameType, event: str, _: object) -> bool:
        caller = frame.f_back
        return event == "call" and caller is not None and caller.f_code is outline

    assert await _counted(below_the_outline) == 0  # was one a plan step, and one a plan
    assert await _counted(_code_called(outline)) == 1  # (and the plan's outline is made)


async def test_a_model_call_asks_its_model_no_name() -> None:
    # valid_response took the model's name, a property of every model, for its error
    # only; it takes the model and asks only when the reply is not a ModelResponse.
    name = vars(ScriptedModel)["name"].fget.__code__
    assert await _counted(_code_called(name)) == 0  # was one a model call (5 a run)


async def test_a_runner_reads_the_clock_once_a_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # It read the loop's clock to arm the step's deadline and again, after the step, to
    # see whether it had held the loop for HOLD; one reading serves both now (the next
    # step's start is the last one's end). HOLD out of reach: timing cannot add a turn.
    monkeypatch.setattr(_step_actor, "HOLD", 1e9)
    actor = _step_actor.__file__

    def clock_read(frame: FrameType, event: str, arg: object) -> bool:
        if event == "c_call":  # asyncio's clock, read as time.monotonic itself (no frame)
            return arg is time.monotonic and frame.f_code.co_filename == actor
        caller = frame.f_back
        return (
            event == "call"
            and frame.f_code.co_name in ("time", "current_time")
            and caller is not None
            and caller.f_code.co_filename == actor
        )

    # One a step, and one as a runner wakes for the first; was two a step (6).
    assert await _counted(clock_read) == _STEPS + 1


async def test_a_step_asks_no_tracing_property() -> None:
    # The runner and the model call asked Telemetry.tracing (a property), twice a step;
    # they read `traced`, which the run's own asks (as it opens its span) refresh.
    tracing = vars(Telemetry)["tracing"].fget.__code__
    # Five a run, as it starts and ends, whatever its length; was two a step more (11).
    assert await _counted(_code_called(tracing)) == 5


async def test_a_run_with_no_limit_asks_nothing_about_charging_cut_calls() -> None:
    # Its ledger is free (no limit at all): no call of a step is charged when cut, and
    # the worker knew that with no call (step_cut, and limits_spending in it, a step).
    cut = _code_called(step_cut.__code__)
    assert await _counted(cut) == 0
    # A budget that holds model calls charges a cut call: each step asks.
    assert await _counted(cut, Budget(model_calls=50)) == _STEPS


async def test_a_steps_events_are_emitted_with_no_call_between() -> None:
    # StepDispatched and StepCompleted go out where they are made (RunBook.emit was two
    # calls a step); a run's own events still go through it: RunStarted, PlanCreated,
    # SynthesisStarted.
    assert await _counted(_code_called(RunBook.emit.__code__)) == 3


async def test_a_fan_out_finds_its_ready_steps_with_no_call_between() -> None:
    # Dispatcher.next_sends reads the ready steps itself (Dispatcher.ready was one call
    # a fan-out). Per step: its send, its report, its commit and the fan-out after it,
    # but for the last step's commit (nothing waits on it: no call, #22); once a run: the
    # first fan-out (its plan indexed), its making, the two looks at what runs as the
    # plan ends and the two at the reports a resume held.
    def dispatcher(frame: FrameType, event: str, _: object) -> bool:
        return event == "call" and frame.f_code.co_qualname.startswith("Dispatcher.")

    assert await _counted(dispatcher) == 4 * _STEPS - 1 + 2 + 1 + 2 + 2
