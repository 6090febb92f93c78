"""A replan is told the tool calls the steps it replaces already made.

A step its check rejected (or one that failed) may have acted, a refund issued; the
replan asks the planner's model afresh, and a step it lists again makes its calls anew
(under new keys where the tool declares none: ``{run}/v2/s1/0``). The replan's request
had no word of those calls, so a planner re-listing the step repeated the refund
unknowingly. Now the request ends with ``Prompts.calls_made`` and a line per such step:
each call's tool, how it ended, its declared key, at most ``CALLS_LISTED`` of them."""

from __future__ import annotations

import dataclasses

import pytest

from regiment.hierarchy import Planner, Prompts, StepReport, StepStatus, ToolOutcome
from regiment.hierarchy.run._config_hash import config_hash
from regiment.hierarchy.run._made_calls import CALLS_LISTED, with_made_calls
from regiment.models import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    tool_call_response,
)
from regiment.tools import Tool, tool

from .brains import Brain, WorkFn, plan_json
from .replan_team import PROBE, replan_team

pytestmark = pytest.mark.anyio

LINE = Prompts().calls_made
AGAIN = plan_json({"id": "s1", "description": "probe"})  # the replan lists the probe again


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


def _calls_so_far(request: ModelRequest) -> int:
    return sum(isinstance(p, ToolResultPart) for m in request.messages for p in m.parts)


class Till:
    """Tools that count their bodies: ``refund`` (no key of its own), ``pay`` (keyed by
    order) and ``charge`` (raises)."""

    def __init__(self) -> None:
        self.refunds = 0

    def tools(self) -> list[Tool[..., object]]:
        @tool
        def refund(order_id: str) -> str:
            """Refund an order."""
            self.refunds += 1
            return f"refunded {order_id}"

        @tool(idempotency_key=("order_id",))
        def pay(order_id: str) -> str:
            """Pay an order."""
            return f"paid {order_id}"

        @tool
        def charge(order_id: str) -> str:
            """Charge an order."""
            raise ValueError(f"card of {order_id} declined")

        return [refund, pay, charge]


def _first_only(work: WorkFn) -> WorkFn:
    """``work`` for the first step the worker is handed; a later one answers at once."""
    handed = 0

    async def once(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        nonlocal handed
        handed += len(request.messages) == 1  # a step's first request: its one message
        return await work(description, results, request) if handed == 1 else "did it"

    return once


def _calling(*calls: tuple[str, str]) -> WorkFn:
    """A worker script: the first step calls each of ``calls`` (tool, order) in turn,
    then answers."""

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        made = _calls_so_far(request)
        if made == len(calls):
            return f"did: {description}"
        name, order = calls[made]
        return tool_call_response(name, {"order_id": order}, call_id=f"c{made}")

    return _first_only(work)


async def _replan_text(work: WorkFn, *, prompts: Prompts | None = None) -> tuple[str, Till]:
    """The replan request of a run whose probe (s1) works as ``work`` says, then is
    rejected by its check; the replan lists it again."""
    till = Till()
    brain = Brain([plan_json(PROBE), AGAIN], work=work)
    team = replan_team(brain, tools=till.tools())
    if prompts is not None:
        team = dataclasses.replace(team, planner=Planner(model=team.planner.model, prompts=prompts))
    result = await team.run("refund order 7")
    assert result.status == "completed", result
    assert len(brain.plan_requests) == 2
    return _text(brain.plan_requests[1]), till


async def test_the_replan_lists_the_calls_of_a_step_its_check_rejected() -> None:
    work = _calling(("refund", "7"), ("pay", "7"), ("charge", "7"))
    text, till = await _replan_text(work)
    assert text.count(LINE) == 1
    assert text.endswith(
        f"{LINE}\n- s1 (v1, worker 'w', rejected by its check): refund succeeded; "
        "pay succeeded (key 'pay:order_id=7'); charge failed (ValueError)"
    )
    assert "declined" not in text  # no result, no error message
    assert till.refunds == 1  # (the listed-again step answered without a call)


async def test_a_step_that_failed_has_its_calls_listed() -> None:
    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if not _calls_so_far(request):
            return tool_call_response("refund", {"order_id": "7"})
        raise RuntimeError("the model's connection broke")

    text, _ = await _replan_text(_first_only(work))
    assert text.endswith(f"{LINE}\n- s1 (v1, worker 'w', failed): refund succeeded")


async def test_many_calls_are_counted_past_the_bound() -> None:
    many = CALLS_LISTED + 2

    async def work(
        description: str, results: list[ToolResultPart], request: ModelRequest
    ) -> ModelResponse | str:
        if _calls_so_far(request):
            return f"did: {description}"
        parts = tuple(
            ToolCallPart(id=f"c{i}", name="refund", arguments={"order_id": str(i)})
            for i in range(many)
        )
        return ModelResponse(parts=parts, stop_reason="tool_use", model="")

    text, till = await _replan_text(_first_only(work))
    assert till.refunds == many
    listed = text.rsplit("\n", 1)[-1]
    assert listed.count("refund succeeded") == CALLS_LISTED
    assert listed.endswith("; and 2 more calls")


async def test_no_calls_no_line_and_the_request_as_before() -> None:
    text, _ = await _replan_text(_calling())  # the probe made no tool call
    assert LINE not in text
    assert text.endswith("Reply with the new steps only, as JSON. Number new ids from s2.")


async def test_an_empty_line_lists_nothing_and_an_override_gets_it_appended() -> None:
    text, till = await _replan_text(_calling(("refund", "7")), prompts=Prompts(calls_made=""))
    assert till.refunds == 1
    assert "refund succeeded" not in text

    class Terse(Prompts):
        def replan_request(self, *, goal: str, **_: object) -> str:
            return f"REPLAN {goal}"

    text, _ = await _replan_text(
        _calling(("refund", "7")), prompts=Terse(calls_made="Done already:")
    )
    assert text.startswith("REPLAN refund order 7")
    assert text.endswith(
        "\n\nDone already:\n- s1 (v1, worker 'w', rejected by its check): refund succeeded"
    )


def _report(*outcomes: ToolOutcome, status: StepStatus = "done") -> StepReport:
    return StepReport(
        run_id="r",
        plan_version=2,
        step_id="s3",
        attempt=0,
        worker="billing",
        status=status,
        tool_outcomes=outcomes,
    )


def _outcome(tool: str, *, error: str | None = None, key: str | None = None) -> ToolOutcome:
    return ToolOutcome(
        tool=tool,
        call_id="c",
        arguments={"order_id": "secret-7"},
        content="result text",
        is_error=error is not None,
        error_type=error,
        idempotency_key=key,
    )


def test_each_outcome_as_the_request_words_it() -> None:
    report = _report(
        _outcome("mail", error="cut"),
        _outcome("pay", key="k" * 200),
        _outcome("lookup", error="timeout"),
        status="timed_out",
    )
    text = with_made_calls("REQUEST", "LINE", [report], rejected={})
    head, listed = text.split("\n\nLINE\n")
    assert head == "REQUEST"
    assert listed.startswith(
        "- s3 (v2, worker 'billing', timed out): mail started and was cut before it "
        "finished (it may have acted); pay succeeded (key 'kkk"
    )
    assert "(200 characters)); lookup failed (timeout)" in listed  # a long key is cut
    assert "secret-7" not in listed
    assert "result text" not in listed
    assert with_made_calls("REQUEST", "LINE", [], rejected={}) == "REQUEST"


def test_the_line_changes_the_config_hash_only_when_set() -> None:
    team = replan_team(Brain([]))
    assert "calls_made" not in repr(team.planner.prompts)  # as runs journaled before hashed it
    other = dataclasses.replace(
        team, planner=Planner(model=team.planner.model, prompts=Prompts(calls_made="x"))
    )
    same = dataclasses.replace(team, planner=Planner(model=team.planner.model, prompts=Prompts()))
    assert config_hash(same) == config_hash(team) != config_hash(other)
