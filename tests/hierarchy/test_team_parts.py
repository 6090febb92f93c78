"""A team built in code with a part of the wrong type is refused when it is made,
with a message that names the part and what it takes, not when a run trips on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from regiment.errors import ConfigError
from regiment.hierarchy import Budget, Check, Compression, Critic, Planner, Team, TeamWorker, Worker
from regiment.hierarchy.guard import AnswerSubject, Pass, guardrail
from regiment.models import (
    AnthropicModel,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    text_response,
)

MODEL = ScriptedModel(["unused"])
PLANNER = Planner(model=MODEL)
WORKER = Worker(name="w", description="does things", model=MODEL)


def _answer_guard(subject: AnswerSubject) -> Pass:
    return Pass()


def _team(**parts: object) -> Callable[[], Team]:
    given: dict[str, object] = {"name": "t", "planner": PLANNER, "workers": [WORKER]} | parts
    return lambda: Team(**given)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # each of these used to start and fail the first run with an AttributeError
        (_team(budget={"model_calls": 3}), "team 't': budget must be a Budget (Budget(model_calls=...)); got the dict {'model_calls': 3}"),
        (_team(checks=[1]), "team 't': checks must map names to Check(description=..., predicate=...); got [1]"),
        (_team(planner=MODEL), "team 't': planner must be a Planner(model=...); got the ScriptedModel 'scripted'"),
        (_team(workers=WORKER), "team 't': workers must be a list of workers; got the Worker 'w' (put it in a list: workers=[...])"),
        (_team(workers=["w"]), "team 't': workers[0] must be a Worker or a TeamWorker; got the str 'w'"),
        (_team(critic=MODEL), "team 't': critic must be a Critic(model=...) or None; got the ScriptedModel 'scripted'"),
        (_team(compression=MODEL), "team 't': compression must be a Compression(context_window=...) or None; got the ScriptedModel 'scripted'"),
        # each of these started and failed its first run with an AttributeError
        (_team(telemetry=3), "team 't': telemetry must be a Telemetry(...) or None; got the int 3"),
        (_team(settings={"max_tokens": 5}), "team 't': settings must be a ModelSettings(...) or None; got the dict {'max_tokens': 5} (write ModelSettings(**{'max_tokens': 5}))"),
        (lambda: Planner(model=MODEL, prompts=3), "Planner: prompts must be a Prompts(...); got the int 3"),  # type: ignore[arg-type]
        (lambda: Planner(model=MODEL, synthesizer_settings=3), "Planner: synthesizer_settings must be a ModelSettings(...) or None; got the int 3"),  # type: ignore[arg-type]
        (lambda: Worker(name="w", description="d", model=MODEL, settings=3), "worker 'w': settings must be a ModelSettings(...) or None; got the int 3"),  # type: ignore[arg-type]
        (lambda: Critic(model=MODEL, settings=3), "Critic: settings must be a ModelSettings(...) or None; got the int 3"),  # type: ignore[arg-type]
        (lambda: Compression(context_window=100, settings=3), "Compression: settings must be a ModelSettings(...) or None; got the int 3"),  # type: ignore[arg-type]
        # these raised TypeError: 'function' object is not iterable
        (_team(guardrails=_answer_guard), "team: guardrails must be a list of guardrails; got _answer_guard (put it in a list: guardrails=[_answer_guard])"),
        (lambda: Worker(name="w", description="d", model=MODEL, guardrails=3), "worker 'w': guardrails must be a list of guardrails; got 3"),  # type: ignore[arg-type]
        (lambda: Worker(name="w", description="d", model=MODEL, tool_guardrails=3), "worker 'w': tool_guardrails must map tool names to lists of guardrails ({'issue_refund': [cap]}); got 3"),  # type: ignore[arg-type]
        # one guard given bare: the hint said "guardrails=[...]", not how these are written
        (lambda: Worker(name="w", description="d", model=MODEL, tools=_as_given([_lookup]), tool_guardrails=_as_given({"_lookup": _answer_guard})), "worker 'w': tool_guardrails '_lookup': guardrails must be a list of guardrails; got _answer_guard (put it in a list: tool_guardrails={'_lookup': [_answer_guard]})"),
        (lambda: Planner(model=MODEL, synthesizer_guardrails=_answer_guard), "synthesizer: guardrails must be a list of guardrails; got _answer_guard (put it in a list: synthesizer_guardrails=[_answer_guard])"),  # type: ignore[arg-type]
        # these were taken, and failed only where the guard was put (or never, unused)
        (lambda: guardrail("answr"), "guardrail kind must be one of model_request, model_reply, plan, tool_call, tool_result, answer, not 'answr'"),  # type: ignore[arg-type]
        (lambda: guardrail("answer", on_trip="warn"), "guardrail('answer'): on_trip must be 'fail_step' or 'tell_model', not 'warn'"),  # type: ignore[arg-type]
        # and these ran, with a blank span name or a fractional concurrency
        (_team(name=""), "Team: name must be the team's name (text); got ''"),
        (_team(concurrency=2.5), "team 't': concurrency must be a whole number of at least 1, got 2.5"),
        (_team(concurrency=True), "team 't': concurrency must be a whole number of at least 1, got True"),
    ],
)  # fmt: skip
def test_a_part_of_the_wrong_type_is_a_config_error_naming_it(
    make: Callable[[], Team], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        make()
    assert str(caught.value) == message


class _NoProvider:
    """A model of the application's, but for its provider."""

    name = "mine"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return text_response("ok")


_CLASS = "must be a Model (AnthropicModel(...), OpenAIModel(...), ScriptedModel(...)){}; got {!r} (the class {}, not a model: make one, {}(...))"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # A Model class has name, provider and complete too, so the Protocol took it, and
        # the run's first call failed: "model <property object ...> (type) raised TypeError".
        (lambda: Worker(name="w", description="d", model=ScriptedModel), "worker 'w': model " + _CLASS.format("", ScriptedModel, "ScriptedModel", "ScriptedModel")),  # type: ignore[arg-type]
        (lambda: Planner(model=AnthropicModel), "Planner: model " + _CLASS.format("", AnthropicModel, "AnthropicModel", "AnthropicModel")),  # type: ignore[arg-type]
        (lambda: Critic(model=ScriptedModel), "Critic: model " + _CLASS.format(", or None", ScriptedModel, "ScriptedModel", "ScriptedModel")),  # type: ignore[arg-type]
        (lambda: guardrail("answer", model=ScriptedModel)(_answer_guard), f"guardrail '_answer_guard': model must be the Model its check asks through judge() (e.g. AnthropicModel(...)), not {ScriptedModel!r}"),  # type: ignore[arg-type]
    ],
)  # fmt: skip
def test_a_model_class_is_refused_saying_to_make_one(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        make()
    assert str(caught.value) == message


def test_a_model_of_ones_own_is_told_what_it_lacks() -> None:
    # It was refused as "must be a Model (AnthropicModel(...), ...); got <_NoProvider ...>",
    # with no word of the property it lacked.
    with pytest.raises(ConfigError) as caught:
        Worker(name="w", description="d", model=_NoProvider())  # type: ignore[arg-type]
    assert str(caught.value).endswith(
        ", which has no provider: a Model has the properties name and provider (str: its "
        "model id, and who serves it, such as 'anthropic') and "
        "async complete(request: ModelRequest) -> ModelResponse"
    )
    with pytest.raises(ConfigError) as caught:
        Critic(model=object())  # type: ignore[arg-type]
    assert "which has no" not in str(caught.value)  # a builtin is no attempt at a Model


def test_the_parts_of_their_types_make_a_team() -> None:
    team = _team(budget=Budget(model_calls=3), concurrency=2)()
    assert team.budget.model_calls == 3


def _lookup(city: str) -> str:
    """The weather in a city."""
    return city


def _accept(report: object) -> bool:
    return True


def _as_given(value: object) -> Any:  # a value of the wrong type, as a caller may give it
    return value


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # these were taken, then a run failed: an AttributeError out of run() for the
        # team worker, and for the checks a failed check (and a replan) on every step
        (lambda: TeamWorker(name="x", description="d", team=_as_given(None)), "worker 'x': team must be a Team(...) for the worker to serve as; got None"),
        (lambda: TeamWorker(name="x", description="d", team=_as_given(WORKER)), "worker 'x': team must be a Team(...) for the worker to serve as; got the Worker 'w'"),
        (lambda: Check(description="c", predicate=_as_given(None)), "Check: predicate must be a function of a StepReport (True when the report is acceptable); got None"),
        (lambda: Check(description="c", predicate=_as_given("app.checks:ok")), "Check: predicate must be a function of a StepReport (True when the report is acceptable); got the str 'app.checks:ok'"),
        (lambda: Check(description="c", predicate=_accept, explain=_as_given("why")), "Check: explain must be a function of a StepReport (the reason it was not acceptable), or None; got the str 'why'"),
        (lambda: Check(description=" ", predicate=_accept), "Check: description must say what the check verifies (the planner reads it); got ' '"),
        # a TypeError: 'function' object is not iterable
        (lambda: Worker(name="w", description="d", model=MODEL, tools=_as_given(_lookup)), "worker 'w': tools must be a list of tools, or a Toolset; got the function _lookup (put it in a list: tools=[_lookup])"),
    ],
)  # fmt: skip
def test_a_worker_or_check_part_of_the_wrong_type_is_refused_when_made(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        make()
    assert str(caught.value) == message
