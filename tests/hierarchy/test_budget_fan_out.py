"""Budgets under fan-out: shares of what was left when the fan-out began, refused
tool calls the model and the caller both see, and token limits checked before a
call starts."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regiment.hierarchy import (
    Budget,
    BudgetExhausted,
    Planner,
    RunCompleted,
    RunFailed,
    RunResult,
    StepCompleted,
    Team,
    Worker,
)
from regiment.journal import JournalSpec
from regiment.models import (
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolResultPart,
    estimate_tokens,
    tool_call_response,
)
from regiment.tools import tool

from ..jump_clock import NEVER, skip
from .brains import Brain, plan_json


class Probe:
    """A team whose steps each call ``probe`` as often as their text says
    (``"part 3 wants 2"``), one call per model reply, then answer."""

    def __init__(
        self,
        steps: list[tuple[int, list[int]]],
        *,
        hold: anyio.Event | None = None,
        reported: int = 0,
    ) -> None:
        self.hold = hold  # tool bodies wait for it, when given
        self.reported = reported  # then set by stream() once this many steps completed
        self.answered: list[str] = []
        self.bodies = 0
        self.replies: list[ModelResponse | str] = []
        plan = plan_json(
            *(
                {"id": f"s{i}", "description": f"part {i} wants {want}"}
                | ({"depends_on": [f"s{d}" for d in deps]} if deps else {})
                for i, (want, deps) in enumerate(steps, 1)
            )
        )
        self.brain = Brain([plan], work=self._work)

    async def _work(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        want = int(description.rsplit(" ", 1)[1])
        seen = sum(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)
        reply: ModelResponse | str = (
            tool_call_response("probe", {"n": seen}) if seen < want else f"did {description}"
        )
        self.replies.append(reply)
        if isinstance(reply, str):
            self.answered.append(description)
            if self.hold is not None and not self.reported:
                self.hold.set()  # the first answer lets the tool bodies go on
        return reply

    def largest_reply(self) -> int:
        """The output tokens of the largest reply any role gave."""
        texts = [*self.brain.plans, self.brain.synthesis]
        return max(
            [estimate_tokens(r) for r in self.replies if not isinstance(r, str)]
            + [estimate_tokens(t) + 3 for t in texts]
        )

    async def stream(self, team: Team, journal: JournalSpec = None) -> RunResult:
        """Stream a run of ``team``: ``hold`` is set once ``reported`` steps completed."""
        completed = 0
        async with team.start(journal=journal) as running, running.stream("goal") as events:
            async for event in events:
                completed += isinstance(event, StepCompleted)
                if self.hold is not None and completed == self.reported:
                    self.hold.set()
        assert isinstance(events.ending, RunCompleted)
        return events.ending.result

    def team(self, budget: Budget, *, concurrency: int = 8, ask_at: int = -1) -> Team:
        """``ask_at``: the ``probe`` call (by ``n``) that waits for an approval."""

        @tool(requires_approval=lambda args: args["n"] == ask_at)
        async def probe(n: int) -> int:
            """Probe."""
            self.bodies += 1
            if self.hold is not None:
                await self.hold.wait()
            return n

        model = ScriptedModel(self.brain)
        worker = Worker(name="w", description="w", model=model, tools=[probe], max_iterations=6)
        return Team(
            name="t",
            planner=Planner(model=model),
            workers=[worker],
            budget=budget,
            concurrency=concurrency,
        )


def _refused(result: RunResult) -> int:
    return sum(
        o.is_error and "allowance" in str(o.content) for r in result.steps for o in r.tool_outcomes
    )


@pytest.mark.anyio
async def test_a_tool_budget_that_suffices_runs_every_parallel_step() -> None:
    probe = Probe([(1, [])] * 5)
    result = await probe.team(Budget(tool_calls=5)).run("five parts")
    assert probe.bodies == 5
    assert result.status == "completed"
    assert _refused(result) == 0


@pytest.mark.anyio
async def test_refused_tool_calls_are_errors_and_end_the_run_when_it_is_spent() -> None:
    probe = Probe([(1, [])] * 5)
    result = await probe.team(Budget(tool_calls=2)).run("five parts")
    assert probe.bodies == 2
    assert result.tool_calls == 2
    assert result.status == "partial"
    assert result.budget_exhausted == "tool_calls"
    assert _refused(result) >= 1
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted) and not e.step_id]
    assert ended.limit == "tool_calls"


@pytest.mark.anyio
async def test_the_run_ends_partial_whatever_order_the_reports_come_in() -> None:
    # One tool call for two steps: s2's call is refused and s2 reports first, while
    # s1's tool body is still running (nothing is spent yet); when s1 has spent the
    # last one, the run is out of tool calls with a refusal on record.
    probe = Probe([(1, []), (1, [])], hold=anyio.Event())
    result = await probe.team(Budget(tool_calls=1)).run("two parts")
    assert probe.answered[0] == "part 2 wants 1"
    assert probe.bodies == 1
    assert result.status == "partial"
    assert result.budget_exhausted == "tool_calls"
    notes = [(e.limit, e.step_id) for e in result.events if isinstance(e, BudgetExhausted)]
    assert notes == [("tool_calls", "s2"), ("tool_calls", None)]


@pytest.mark.anyio
async def test_the_step_whose_report_spends_the_last_tool_call_is_kept() -> None:
    # One at a time, each step's share is one call of the two it asks for: both are
    # refused their second and answer anyway. s2's report is the one that finds the
    # run's tool calls spent; its work is done (its tool ran), so it is committed and
    # in the answer, as a report that comes in while the run ends is.
    probe = Probe([(2, []), (2, [])])
    result = await probe.team(Budget(tool_calls=2), concurrency=1).run("two parts")
    assert probe.bodies == 2
    assert result.status == "partial"
    assert result.budget_exhausted == "tool_calls"
    assert result.committed == ("s1", "s2")
    assert [r.step_id for r in result.steps] == ["s1", "s2"]
    assert "did part 2 wants 2" in result.answer
    done = [e.step_id for e in result.events if isinstance(e, StepCompleted)]
    assert done == ["s1", "s2"]


@pytest.mark.anyio
async def test_a_step_that_outgrows_its_share_is_told_and_the_run_goes_on() -> None:
    # 4 tool calls for 2 steps: 2 each; s1 asks for 3, s2 for none. s1 asks before s2
    # has reported (the scripted model answers at once): s2 still holds its share, so
    # there is nothing to top s1 up with (test_budget_top_up: once s2 has reported).
    probe = Probe([(3, []), (0, [])])
    result = await probe.team(Budget(tool_calls=4)).run("two parts")
    assert probe.bodies == 2
    assert result.status == "completed"
    report = next(r for r in result.steps if r.step_id == "s1")
    assert report.refused_tool_calls == 1
    assert [o.is_error for o in report.tool_outcomes] == [False, False, True]
    notes = [e for e in result.events if isinstance(e, BudgetExhausted)]
    assert [(e.limit, e.step_id) for e in notes] == [("tool_calls", "s1")]


@pytest.mark.anyio
async def test_a_token_budget_is_checked_before_each_call() -> None:
    # Each worker call costs more than a fifth of 1,500 tokens: not all five can run
    # at once, and no call starts that its estimated input cannot pay for.
    probe = Probe([(1, [])] * 5)
    result = await probe.team(Budget(tokens=1_500)).run("five parts")
    assert result.usage.total_tokens <= 1_500 + probe.largest_reply()
    assert result.status == "partial"
    assert result.budget_exhausted == "tokens"


@pytest.mark.anyio
async def test_an_input_token_budget_is_checked_before_each_call_of_parallel_steps() -> None:
    # Five parallel steps of four calls each need about 10,000 input tokens: with
    # 1,500 the steps share what is left and no call starts that cannot pay for
    # its (estimated) input, so the run's input stays within its budget.
    probe = Probe([(3, [])] * 5)
    result = await probe.team(Budget(input_tokens=1_500)).run("five parts")
    assert result.usage.input_tokens <= 1_500
    assert result.status == "partial"
    assert result.budget_exhausted == "input_tokens"


@pytest.mark.anyio
async def test_an_output_token_budget_is_shared_by_parallel_steps() -> None:
    # The plan's reply leaves 85 of 150 output tokens; each of the five steps
    # stops once its share is spent, so the run goes over by at most one worker
    # reply per step (unshared, every step ran on: 285 tokens).
    probe = Probe([(3, [])] * 5)
    result = await probe.team(Budget(output_tokens=150)).run("five parts")
    worker_reply = max(estimate_tokens(r) + 3 for r in probe.replies)
    assert result.usage.output_tokens <= 150 + 5 * worker_reply
    assert result.status == "partial"
    assert result.budget_exhausted == "output_tokens"
    assert probe.bodies < 15


@pytest.mark.anyio
async def test_a_step_out_of_model_calls_names_the_budget_field() -> None:
    probe = Probe([(4, [])])
    result = await probe.team(Budget(model_calls=4)).run("one part")
    assert result.status == "partial"
    assert result.budget_exhausted == "model_calls"


@pytest.mark.anyio
async def test_a_model_call_budget_that_suffices_runs_every_parallel_step() -> None:
    # Five parallel steps of four calls each, a cap of six: with the plan's call and
    # the synthesis' 22 is enough. The fourth step would get the 2 calls left after
    # three full caps and run out halfway, ending the run; it waits for what the
    # running steps give back instead.
    probe = Probe([(3, [])] * 5)
    result = await probe.team(Budget(model_calls=22)).run("five parts")
    assert result.status == "completed"
    assert result.model_calls == 22
    assert probe.bodies == 15


_steps = st.lists(
    st.tuples(st.integers(0, 3), st.lists(st.integers(1, 6), max_size=2)),
    min_size=1,
    max_size=6,
).map(lambda steps: [(w, sorted({d for d in deps if d <= i})) for i, (w, deps) in enumerate(steps)])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25, deadline=None)
@given(steps=_steps, tool_calls=st.integers(0, 16), concurrency=st.integers(1, 6))
def test_tool_budgets_under_random_fan_outs(
    backend: str, steps: list[tuple[int, list[int]]], tool_calls: int, concurrency: int
) -> None:
    probe = Probe(steps)
    team = probe.team(Budget(tool_calls=tool_calls), concurrency=concurrency)
    result = anyio.run(team.run, "goal", backend=backend)
    wants = [w for w, _ in steps]
    assert probe.bodies <= tool_calls  # never overshoots
    assert result.tool_calls == probe.bodies
    if tool_calls >= len(steps) * max(wants):  # enough for every step's even share
        assert probe.bodies == sum(wants)  # so none starves
        assert result.status == "completed"
        assert _refused(result) == 0
    refused = _refused(result)
    if refused:
        assert any(isinstance(e, BudgetExhausted) for e in result.events)
    if result.status == "partial":
        assert result.budget_exhausted in ("tool_calls", "model_calls")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=25, deadline=None)
@given(steps=_steps, tokens=st.integers(100, 12_000), concurrency=st.integers(1, 6))
def test_token_budgets_under_random_fan_outs(
    backend: str, steps: list[tuple[int, list[int]]], tokens: int, concurrency: int
) -> None:
    free = Probe(steps)
    unlimited = anyio.run(free.team(Budget(), concurrency=concurrency).run, "goal", backend=backend)
    probe = Probe(steps)
    team = probe.team(Budget(tokens=tokens), concurrency=concurrency)
    result = anyio.run(team.run, "goal", backend=backend)
    spent = result.usage.total_tokens
    reply = free.largest_reply()
    # The documented bound: what was left, plus one reply per step in flight and
    # the planner's (the model's max_tokens caps each reply).
    assert spent <= tokens + (min(concurrency, len(steps)) + 1) * reply
    roles = unlimited.usage_by_role
    need = (
        roles["planner"].total_tokens
        + len(steps) * max(r.usage.total_tokens for r in unlimited.steps)
        + roles["synthesizer"].total_tokens
    )
    if tokens >= need:  # every step's even share pays for the whole step
        assert result.status == "completed"
        assert result.committed == unlimited.committed
    elif result.status == "partial":
        assert result.budget_exhausted == "tokens"


class Heavy:
    """A team of one step that calls ``probe`` until its token share runs out, beside
    light steps that answer once ``gate`` is set: by the heavy step's first call, or
    never (``opens=False``). A heavy step short of tokens waits for its siblings to give
    back what they hold (unless a call of the run waits for a decision)."""

    def __init__(self, light: int, *, pay: bool = False, opens: bool = True) -> None:
        self.gate = anyio.Event()
        self.opens = opens
        self.working: set[str] = set()  # the steps whose work has begun
        self.all_working = anyio.Event()  # set once every step's has
        self.pay = pay  # the light steps then call ``pay`` at once, which waits for approval
        steps = [{"description": "heavy"}, *({"description": f"light {i}"} for i in range(light))]
        self.brain = Brain([plan_json(*steps)], work=self._work)
        self._steps = len(steps)

    async def _work(
        self, description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        self.working.add(description)
        if len(self.working) == self._steps:
            self.all_working.set()
        if description == "heavy":
            if self.opens:
                self.gate.set()
            return tool_call_response("probe", {"n": len(request.messages)})
        if self.pay and not results:
            return tool_call_response("pay", {"n": 1})
        await self.gate.wait()
        return f"did {description}"

    def team(self, budget: Budget) -> Team:
        @tool
        async def probe(n: int) -> str:
            """Probe."""
            return "data " * 40

        @tool
        async def pay(n: int) -> str:
            """Pay."""
            return "paid"

        model = ScriptedModel(self.brain)
        worker = Worker(
            name="w",
            description="w",
            model=model,
            tools=[probe, pay],
            max_iterations=20,
            require_approval=["pay"],
        )
        return Team(name="t", planner=Planner(model=model), workers=[worker], budget=budget)

    async def run(self, budget: Budget) -> RunCompleted | RunFailed:
        """Stream a run (its last event)."""
        async with self.team(budget).start() as running, running.stream("go") as events:
            async for _ in events:
                pass
        assert isinstance(events.ending, RunCompleted | RunFailed)
        return events.ending


@pytest.mark.anyio
async def test_a_step_out_of_its_token_share_lets_its_siblings_finish() -> None:
    # The heavy step outgrows its share of 4,000 tokens and ends the run partial; the
    # light ones hold shares of their own, so they are not cut (their work would be
    # lost): they answer, are committed and are in the answer, within the budget.
    ending = await Heavy(light=3).run(Budget(tokens=4_000))
    assert isinstance(ending, RunCompleted)
    result = ending.result
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")
    assert {r.step_id: r.status for r in result.steps} == {
        "s1": "budget_exhausted",
        "s2": "done",
        "s3": "done",
        "s4": "done",
    }
    assert sorted(result.committed) == ["s2", "s3", "s4"]
    assert "did light 2" in result.answer
    assert result.usage.total_tokens <= 4_000
    failed = await Heavy(light=3).run(Budget(tokens=4_000, on_exhausted="raise"))
    assert isinstance(failed, RunFailed)
    assert failed.error_type == "BudgetExceeded"
    assert sorted(failed.committed) == ["s2", "s3", "s4"]


@pytest.mark.anyio
@pytest.mark.jump_clock
async def test_the_wall_clock_cuts_siblings_left_to_finish() -> None:
    # The light steps never answer: the heavy one, short of tokens, waits for them to
    # give back their shares, and the wall clock cuts all three (none hangs). The clock
    # is never reached in real time (a short one could run out while planning: a partial
    # run of no steps); once all three have begun, it is moved past the clock, so it
    # runs out while they wait (or while the heavy one still probes: it is cut then).
    heavy = Heavy(light=2, opens=False)

    async def run_out_once_all_work() -> None:
        await heavy.all_working.wait()
        await skip(NEVER)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_out_once_all_work)
        result = await heavy.team(Budget(tokens=4_000, wall_clock=NEVER)).run("go")
    assert (result.status, result.budget_exhausted) == ("partial", "wall_clock")
    statuses = {r.step_id: r.status for r in result.steps}
    # (the heavy one ends budget_exhausted if the clock's end wakes it before its cut)
    assert statuses.pop("s1") in ("cancelled", "budget_exhausted")
    assert statuses == {"s2": "cancelled", "s3": "cancelled"}
    assert result.usage.total_tokens <= 4_000


@pytest.mark.anyio
async def test_siblings_left_to_finish_that_wait_for_a_decision_are_cut() -> None:
    # An ending run waits for no human: once every sibling waits for approval, the
    # run ends partial (it does not pause, nor hang until the requests time out).
    ending = await Heavy(light=2, pay=True).run(Budget(tokens=4_000))
    assert isinstance(ending, RunCompleted)
    result = ending.result
    assert (result.status, result.budget_exhausted) == ("partial", "tokens")
    statuses = {r.step_id: r.status for r in result.steps}
    assert statuses == {"s1": "budget_exhausted", "s2": "cancelled", "s3": "cancelled"}
