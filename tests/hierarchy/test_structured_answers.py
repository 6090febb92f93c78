"""Structured answers: ``Team(output_type=Model)`` asks the synthesizer for JSON
matching the model, validates it, re-asks with the validation error (bounded),
and returns the instance as ``RunResult.output``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, field_validator

from regiment.errors import ConfigError, OutputInvalid, RunError
from regiment.hierarchy import Planner, RunResult, Team, Worker, result_from_json, to_json
from regiment.hierarchy.run._config_hash import config_hash
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

from .brains import plan_json

pytestmark = pytest.mark.anyio


class Refund(BaseModel):
    """A refund decision."""

    order_id: str
    amount: float
    approved: bool


VALID = '{"order_id": "A-1", "amount": 12.5, "approved": true}'
MISSING_AMOUNT = '{"order_id": "A-1", "approved": true}'

Answer = str | ModelResponse


def team_answering(answers: Iterator[Answer], seen: list[ModelRequest], **options: object) -> Team:
    """A one-step team whose synthesizer gives ``answers`` in turn (``seen`` gets its requests)."""

    def brain(request: ModelRequest) -> Answer:
        match request.role:
            case "planner":
                return plan_json({"description": "look up order A-1", "worker": "orders"})
            case "worker":
                return "order A-1: 12.50 paid"
            case "synthesizer":
                seen.append(request)
                return next(answers)
            case _:
                raise AssertionError(request.role)

    model = ScriptedModel(brain)
    return Team(
        name="refunds",
        planner=Planner(model=model),
        workers=[Worker(name="orders", description="order lookups", model=model)],
        **({"output_type": Refund} | options),  # type: ignore[arg-type]
    )


def tool_answer(arguments: str, call_id: str) -> ModelResponse:
    """How Claude answers under a forced tool: a call of ``final_answer``."""
    part = ToolCallPart(id=call_id, name="final_answer", arguments=json.loads(arguments))
    return ModelResponse(
        parts=(part,), stop_reason="tool_use", usage=Usage(input_tokens=7), model="claude"
    )


def last_turn(request: ModelRequest) -> Message:
    return request.messages[-1]


async def test_a_valid_answer_is_the_validated_instance() -> None:
    seen: list[ModelRequest] = []
    result = await team_answering(iter([VALID]), seen).run("refund order A-1?")

    assert result.status == "completed"
    assert result.output == Refund(order_id="A-1", amount=12.5, approved=True)
    assert result.output_as(Refund).amount == 12.5
    assert json.loads(result.answer) == {"order_id": "A-1", "amount": 12.5, "approved": True}
    (request,) = seen
    assert request.output is not None  # asked for natively, with the model's schema
    assert request.output.name == "final_answer"
    assert request.output.input_schema == Refund.model_json_schema()
    assert request.output.description == "A refund decision."


async def test_the_json_carries_the_answer_and_decoding_rebuilds_the_output() -> None:
    result = await team_answering(iter([VALID]), []).run("refund order A-1?")

    data = to_json(result)
    assert b"A-1" in data
    assert result_from_json(data).output is None  # the type is not in the JSON
    rebuilt = result_from_json(data, output_type=Refund)
    assert rebuilt.output == result.output
    assert rebuilt == result
    with pytest.raises(TypeError, match="output is NoneType, not Refund"):
        result_from_json(data).output_as(Refund)


async def test_an_invalid_answer_is_asked_again_with_the_validation_error() -> None:
    seen: list[ModelRequest] = []
    result = await team_answering(iter([MISSING_AMOUNT, VALID]), seen).run("refund A-1?")

    assert result.output == Refund(order_id="A-1", amount=12.5, approved=True)
    first, second = seen
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[len(first.messages)].role == "assistant"
    assert second.messages[len(first.messages)].parts == (TextPart(text=MISSING_AMOUNT),)
    feedback = last_turn(second)
    assert feedback.role == "user"
    (part,) = feedback.parts
    assert isinstance(part, TextPart)
    assert "does not validate against Refund" in part.text
    assert "amount" in part.text
    assert "Field required" in part.text
    assert result.model_calls == 4  # plan, worker, and two synthesis attempts


async def test_a_reask_after_a_tool_call_answer_is_its_tool_result() -> None:
    seen: list[ModelRequest] = []
    answers = iter([tool_answer(MISSING_AMOUNT, "call-1"), tool_answer(VALID, "call-2")])
    result = await team_answering(answers, seen).run("refund A-1?")

    assert result.output_as(Refund).order_id == "A-1"
    assert json.loads(result.answer)["amount"] == 12.5  # the call's arguments, as text
    (part,) = last_turn(seen[1]).parts
    assert isinstance(part, ToolResultPart)
    assert (part.call_id, part.is_error) == ("call-1", True)
    assert "amount" in part.content
    assert result.usage_by_role["synthesizer"].input_tokens == 14  # both attempts charged


async def test_an_answer_that_never_validates_fails_the_run_after_the_bound() -> None:
    seen: list[ModelRequest] = []
    team = team_answering(iter([MISSING_AMOUNT] * 5), seen, output_retries=1)

    with pytest.raises(OutputInvalid) as caught:
        await team.run("refund A-1?")

    error = caught.value
    assert len(seen) == 2  # the first answer and one re-ask
    assert error.attempts == 2
    assert error.output_type == f"{__name__}.Refund"
    assert "amount" in error.detail
    message = str(error)
    assert f"did not validate against {__name__}.Refund in 2 attempts" in message
    assert "Field required" in message
    assert "output_retries" in message


async def test_answers_that_never_validate_are_charged_to_the_run() -> None:
    # Each invalid answer was billed; the failed run's usage had none of them.
    answer = tool_answer(MISSING_AMOUNT, "call-1")
    team = team_answering(iter([answer] * 3), [], output_retries=2)

    with pytest.raises(OutputInvalid) as caught:
        await team.run("refund A-1?")

    error = caught.value
    assert error.usage == Usage(input_tokens=21)  # three attempts of 7
    assert error.failed is not None
    assert error.failed.model_calls == 5  # plan, worker, and three synthesis attempts
    plan_and_step = error.failed.usage.input_tokens - 21
    assert plan_and_step > 0  # the scripted model's estimates for the plan and the step


def test_a_bad_output_type_or_retry_count_is_a_config_error() -> None:
    make: Callable[..., Team] = team_answering
    with pytest.raises(ConfigError, match="output_type must be a pydantic model class"):
        make(iter([]), [], output_type=dict)
    with pytest.raises(ConfigError, match="output_retries must be 0 or more, got -1"):
        make(iter([]), [], output_retries=-1)
    with pytest.raises(ConfigError, match="output_type must be a pydantic model class"):
        make(iter([]), [], output_type=BaseModel)  # no fields to answer with


def test_output_retries_below_zero_is_refused_without_an_output_type() -> None:
    team = team_answering(iter([]), [])
    with pytest.raises(ConfigError, match="output_retries must be 0 or more, got -1"):
        dataclasses.replace(team, output_type=None, output_retries=-1)


def test_a_result_without_a_structured_answer_has_no_output() -> None:
    result = RunResult(
        run_id="r", goal="g", answer="text", status="completed", plans=(), steps=(), committed=()
    )
    assert result.output is None


class Refusal(BaseModel):
    """A refusal."""

    order_id: str
    reason: str


async def test_a_journaled_structured_run_and_its_config_hash(tmp_path: Path) -> None:
    team = team_answering(iter([MISSING_AMOUNT, VALID]), [])
    async with team.start(journal=tmp_path / "runs.db") as running:
        result = await running.run("refund A-1?")

    assert result.output_as(Refund).amount == 12.5
    assert result.model_calls == 4
    plain = dataclasses.replace(team, output_type=None)
    other = dataclasses.replace(team, output_type=Refusal)
    fewer = dataclasses.replace(team, output_retries=0)
    hashes = {config_hash(t) for t in (team, plain, other, fewer)}
    assert len(hashes) == 4  # a resume refuses a team whose answer shape changed


class Checked(BaseModel):
    """A refund whose validator has a bug: it raises something not a ValueError."""

    amount: float

    @field_validator("amount")
    @classmethod
    def _positive(cls, value: float) -> float:
        raise LookupError("no currency table")


async def test_a_validator_that_raises_fails_the_run_naming_the_output_type() -> None:
    # It said "the synthesis model call failed: LookupError: ...", as if the model had.
    seen: list[ModelRequest] = []
    team = team_answering(iter(['{"amount": 1}'] * 2), seen, output_type=Checked)
    async with team.start() as running:
        for goal in ("first", "second"):  # the started team serves the next run
            with pytest.raises(RunError) as caught:
                await running.run(goal)
            assert type(caught.value) is RunError
            assert str(caught.value) == (
                f"a validator of the output_type {__name__}.Checked raised LookupError: no "
                "currency table; a validator raises ValueError for an answer that does not "
                "fit (the synthesizer is asked again); fix it to do so, or to accept the answer"
            )
            assert isinstance(caught.value.__cause__, LookupError)
            assert caught.value.failed is not None
    assert len(seen) == 2  # asked once a run: a bug is not asked about again


async def test_an_answer_that_never_validates_says_why_on_one_line() -> None:
    # The message quoted pydantic's own text: several lines, a help link after each
    # error, and "Make the model easier ..." run on after the link; `regiment run`
    # prints the last line of a failure as its reason.
    team = team_answering(iter([MISSING_AMOUNT] * 2), [], output_retries=1)
    with pytest.raises(OutputInvalid) as caught:
        await team.run("refund A-1?")
    message = str(caught.value)
    assert "\n" not in message
    assert "errors.pydantic.dev" not in message
    assert "last error: amount: Field required. Make the model easier to fill" in message
    assert caught.value.detail == "amount: Field required"
