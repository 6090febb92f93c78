"""A count a run says in words takes the singular for one: "1 tool call refused", not
"1 tool call(s) refused" (and its verb agrees: "1 tool call was refused")."""

from __future__ import annotations

import re

import anyio
import pytest

from regiment.hierarchy import Budget, BudgetExhausted, Prompts

from .test_budget_fan_out import Probe


@pytest.mark.anyio
async def test_one_refused_tool_call_of_a_one_call_budget_is_said_in_the_singular() -> None:
    # One tool call for two steps (as in test_budget_fan_out): s2's call is refused, then
    # s1 spends the last one and the run ends partial.
    probe = Probe([(1, []), (1, [])], hold=anyio.Event())
    result = await probe.team(Budget(tool_calls=1)).run("two parts")
    assert (result.status, result.budget_exhausted) == ("partial", "tool_calls")
    details = [(e.step_id, e.detail) for e in result.events if isinstance(e, BudgetExhausted)]
    # They said "step s2: 1 tool call(s) refused, ..." and "1 tool call(s) were refused
    # and the run's 1 tool calls are all spent".
    assert details == [
        ("s2", "step s2: 1 tool call refused, its share of the tool-call budget was used up"),
        (None, "1 tool call was refused and the run's 1 tool call is all spent"),
    ]


@pytest.mark.anyio
async def test_refused_tool_calls_of_a_larger_budget_are_said_in_the_plural() -> None:
    probe = Probe([(1, [])] * 5)
    result = await probe.team(Budget(tool_calls=2)).run("five parts")
    (ended,) = [e for e in result.events if isinstance(e, BudgetExhausted) and not e.step_id]
    # however many were refused by the time it ended, the verb agrees with the count
    said = r"(1 tool call was|([2-9]|\d\d+) tool calls were) refused"
    assert re.fullmatch(f"{said} and the run's 2 tool calls are all spent", ended.detail)


def test_the_synthesis_request_counts_its_artefacts() -> None:
    # It said "1 finished artefact(s) will be appended ...; do not repeat them".
    one = Prompts().synthesis_request(goal="g", committed="- s1: 42", artifacts=["a"])
    assert one.endswith(
        "\n\n1 finished artefact will be appended verbatim after your text; "
        "do not repeat it, introduce it."
    )
    two = Prompts().synthesis_request(goal="g", committed="- s1: 42", artifacts=["a", "b"])
    assert two.endswith(
        "2 finished artefacts will be appended verbatim after your text; "
        "do not repeat them, introduce them."
    )
