"""What a plan step and a planner-side call make that nobody needs (issue #22).

Each coroutine costs ~0.7k CPU instructions to make, run and end: a step's report is
handled, committed and the next step sent with no coroutine for the hops that only
forward (the planner's message switch, its commit, its sends when the mailboxes have
room, the worker's ``work``), and in a run with no journal with none at all (the planner
takes the report as a plain call); a step with nothing to replay, journal or stream makes
no log of its calls unless it calls a tool. A planner-side call with no guards around it makes no
purse for their judges (the purse is read only by a guard's judge call).

Counted by the interpreter's profiler over runs of a started team (after a first run
has warmed it up), so the counts are exact on either backend.
"""

from __future__ import annotations

import collections
import dis
import inspect
from types import CodeType, FrameType

import pytest

from regiment.hierarchy import Planner, RequestSubject, RunCompleted, Team, Worker
from regiment.hierarchy.guard import Outcome, Pass
from regiment.hierarchy.guard._judge import judging_within, ledger_purse
from regiment.hierarchy.workers._journal_calls import StepCalls
from regiment.models import ScriptedModel

from .brains import Brain, plan_json
from .profiled import CallCounter

pytestmark = pytest.mark.anyio

_ASYNC = inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_GENERATOR
_STARTS: dict[CodeType, int] = {}


def _start(code: CodeType) -> int:
    """Where a coroutine's frame stands as it first runs (later resumes stand further)."""
    if (offset := _STARTS.get(code)) is None:
        offset = _STARTS[code] = next(
            i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"
        )
    return offset


def _team(steps: int, planner_guards: bool = False) -> Team:
    plan = plan_json(*({"description": f"step {n}"} for n in range(steps)))
    model = ScriptedModel(Brain([plan] * 2))

    def looks(subject: RequestSubject) -> Outcome:
        return Pass()

    return Team(
        name="coroutines",
        planner=Planner(model=model, guardrails=[looks] if planner_guards else []),
        workers=[Worker(name="w", description="does steps", model=model)],
    )


async def _coroutines_made(steps: int) -> collections.Counter[str]:
    """The coroutines (and generators) one ``steps``-step run makes, by name."""
    made: collections.Counter[str] = collections.Counter()

    def first_run(frame: FrameType, event: str, _: object) -> bool:
        code = frame.f_code
        if event == "call" and code.co_flags & _ASYNC and frame.f_lasti == _start(code):
            made[code.co_qualname] += 1
        return False

    async with _team(steps).start() as running:
        assert (await running.run("warm up")).status == "completed"
        with CallCounter(first_run):
            result = await running.run("do them")
    assert result.status == "completed"
    return made


async def test_a_step_makes_no_coroutine_for_the_hops_that_only_forward() -> None:
    one, four = await _coroutines_made(1), await _coroutines_made(4)
    per_step = four - one
    forwarding = ("PlannerActor._handle", "PlannerActor._apply", "send_all", "work")
    assert [name for name in per_step if name.endswith(forwarding)] == []
    # The hops that do work still make theirs, one a step (what is counted is there):
    # the worker's step and its loop.
    assert [per_step[name] for name in ("StepActor._outcome", "run_tool_loop")] == [3, 3]


async def test_a_report_is_taken_committed_and_the_next_step_sent_with_no_coroutine() -> None:
    # A run with no journal, not nested: its idle planner takes a step's report as a
    # plain call in the runner's task (_handle_now). It took a turn there, five
    # coroutines and generators a step: the turn, the generator that ran it in the
    # planner's context, the news, the report and the dispatch of the next step.
    one, four = await _coroutines_made(1), await _coroutines_made(4)
    per_step = four - one
    planner_side = (
        "TakesTurns._turn_here",
        "ContextTurns.run",
        "PausesForApprovals._on_step_news",
        "PlannerActor._on_report",
        "PlannerActor._dispatch_ready",
    )
    assert [per_step[name] for name in planner_side] == [0, 0, 0, 0, 0]
    # Nor is it queued for the planner's own task (it would take a turn there).
    assert per_step["TakesTurns.take_turn"] == 0


@pytest.mark.parametrize("guarded", [False, True], ids=["no guards", "planner guards"])
async def test_a_planner_call_makes_a_purse_only_for_guards_around_it(guarded: bool) -> None:
    purse, held = ledger_purse.__code__, judging_within.__init__.__code__
    counter = CallCounter(lambda frame, event, _: event == "call" and frame.f_code in (purse, held))
    async with _team(1, planner_guards=guarded).start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            result = await running.run("do it")
    assert result.status == "completed"
    # The plan call's and the synthesis call's: a purse, held while each runs.
    assert counter.count == (2 * 2 if guarded else 0)


async def _step_calls_made(steps: int, *, streamed: bool) -> int:
    """How many ``StepCalls`` (a step's log of its model and tool calls) one run makes."""
    made = StepCalls.__init__.__code__
    counter = CallCounter(lambda frame, event, _: event == "call" and frame.f_code is made)
    async with _team(steps).start() as running:
        assert (await running.run("warm up")).status == "completed"
        with counter:
            if streamed:
                async with running.stream("do them") as events:
                    last = [event async for event in events][-1]
                assert isinstance(last, RunCompleted)
            else:
                assert (await running.run("do them")).status == "completed"
    return counter.count


async def test_a_step_with_nothing_to_replay_journal_or_stream_makes_no_call_log() -> None:
    # Its model calls go straight to the model; a tool call would make the log then.
    assert await _step_calls_made(3, streamed=False) == 0
    # A streamed run's steps stream their calls through it: one each.
    assert await _step_calls_made(3, streamed=True) == 3


async def test_a_workers_plain_model_call_makes_no_coroutine_of_its_callers() -> None:
    # No settings to merge, no metrics, span, guards or call log: the worker's loop awaits
    # its model itself (ModelCaller.call was a coroutine a call that only forwarded to it,
    # and the reply is still priced, made encodable and checked: ModelCaller.answered).
    one, four = await _coroutines_made(1), await _coroutines_made(4)
    per_step = four - one
    assert [per_step["ModelCaller.call"], per_step["ScriptedModel.complete"]] == [0, 3]
