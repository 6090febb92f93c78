"""What regiment's own span code makes a traced step do (issue #22, row 6), counted
exactly by the interpreter's profiler over a warmed-up team's runs, never timed: a
step's ``invoke_agent`` and ``chat`` spans are opened without the generic opening
path, a traced model call builds and checks no settings object for its span's
``gen_ai.request.*`` attributes, and a span that ends without an exception looks
at no exception on its way out. What the spans say is checked by the other tests
here (and ``tests/hierarchy/test_role_settings.py`` for the applied settings)."""

from __future__ import annotations

from types import FrameType
from urllib.parse import urlsplit

import pytest
from opentelemetry.sdk.trace import TracerProvider

from regiment.hierarchy import Planner, Team, Worker
from regiment.hierarchy._log_context import log_context
from regiment.hierarchy._model_call import ModelCaller
from regiment.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ScriptedModel,
    ToolResultPart,
    text_response,
)
from regiment.telemetry import SpanCollector, Telemetry, _attributes, _record, _scope, _telemetry

from ..hierarchy.brains import Brain, plan_json
from ..hierarchy.profiled import CallCounter, Matches

pytestmark = pytest.mark.anyio

_TRACING = Telemetry.tracing.fget.__code__  # type: ignore[attr-defined]


async def _work(description: str, results: list[ToolResultPart], request: ModelRequest) -> str:
    return f"did {description}"


async def _counted(steps: int, matches: Matches) -> tuple[int, int]:
    """Calls ``matches`` accepts in one traced run of a ``steps``-step sequential plan,
    and the spans that run recorded."""
    plan = [
        {"id": f"s{i}", "description": f"part {i}", "depends_on": [f"s{i - 1}"] if i > 1 else []}
        for i in range(1, steps + 1)
    ]
    model = ScriptedModel(Brain([plan_json(*plan)] * 2, work=_work))
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    team = Team(
        name="steps",
        planner=Planner(model=model, settings=ModelSettings(temperature=0.2)),
        workers=[
            Worker(
                name="w",
                description="does parts",
                model=model,
                settings=ModelSettings(max_tokens=500, top_p=0.5),
            )
        ],
        settings=ModelSettings(max_tokens=900, stop_sequences=("END",)),
        telemetry=Telemetry(provider),
    )
    counter = CallCounter(matches)
    try:
        async with team.start() as running:
            assert (await running.run("warm up")).status == "completed"
            collector.clear()
            with counter:
                result = await running.run("do the parts")
    finally:
        provider.shutdown()
    assert result.status == "completed"
    assert len(result.steps) == steps
    return counter.count, len(collector.spans())


def _code_is(*codes: object) -> Matches:
    return lambda frame, event, arg: event == "call" and frame.f_code in codes


async def test_a_step_s_spans_skip_the_generic_opening_path() -> None:
    generic = _code_is(_telemetry._open.__code__, _scope.open_span.__code__)
    one, spans_one = await _counted(1, generic)
    three, spans_three = await _counted(3, generic)
    assert spans_three - spans_one == 2 * 2  # two more steps: an agent and a chat span each
    assert three == one  # the run's own spans (root, plan, synthesis) only


async def test_a_traced_step_enters_no_log_context() -> None:
    """A step's log mark is set once, by ``_outcome`` (a C call), traced or not: a traced
    step entered ``log_context`` around it as well (3 Python calls a step). The records
    still carry the step: tests/models/test_retry_log_context.py, traced."""
    entered = _code_is(log_context.__enter__.__code__, log_context.__init__.__code__)
    one, spans_one = await _counted(1, entered)
    three, spans_three = await _counted(3, entered)
    assert spans_three - spans_one == 2 * 2
    assert three == one  # the planner side's (plan and synthesis calls) only


async def test_a_traced_model_call_builds_no_settings_for_its_span() -> None:
    built, spans = await _counted(3, _code_is(ModelSettings.__post_init__.__code__))
    assert spans >= 3 * 2
    assert built == 0


def _exception_check(frame: FrameType, event: str, arg: object) -> bool:
    exit_code = _scope._SpanScope.__exit__.__code__
    return event == "c_call" and arg is isinstance and frame.f_code is exit_code


async def test_a_span_ended_without_an_exception_checks_for_none() -> None:
    checks, spans = await _counted(3, _exception_check)
    assert spans >= 3 * 2
    assert checks == 0


# What reading a parsed URL's host costs each time (urlsplit itself keeps a cache).
_HOSTNAME = type(urlsplit("http://a")).hostname.fget.__code__  # type: ignore[attr-defined]


class _RemoteModel:
    """A model that answers at once and says where its API lives, as the SDK models do."""

    name = "remote-x"
    provider = "openai"
    base_url = "https://models.cost.test:8443/v1/"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return text_response("ok")


async def test_a_models_api_address_is_parsed_once_not_per_call() -> None:
    collector = SpanCollector()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(collector)
    caller = ModelCaller(_RemoteModel(), "planner", Telemetry(provider))
    request = ModelRequest(system="s", messages=(Message.user("hi"),))
    counter = CallCounter(_code_is(_HOSTNAME))
    with counter:
        for _ in range(3):
            await caller.call(request)
    provider.shutdown()
    chats = [s for s in collector.spans() if s.name == "chat remote-x"]
    assert len(chats) == 3
    for chat in chats:
        assert (chat.attributes or {})["server.address"] == "models.cost.test"
        assert (chat.attributes or {})["server.port"] == 8443
    assert counter.count <= 1  # the first call's (none if another test made it)


async def test_a_step_s_spans_ask_no_tracing_property() -> None:
    per_run = _code_is(_TRACING)
    one, _ = await _counted(1, per_run)
    three, _ = await _counted(3, per_run)
    assert three == one  # no `tracing` property call per step: `traced` says yes


def _in_scope_module(frame: FrameType, event: str, arg: object) -> bool:
    return event == "call" and frame.f_code.co_filename == _scope.__file__


async def test_a_span_s_scope_costs_its_entry_and_exit_only() -> None:
    """A step's two spans make four Python calls in the scope's module (enter and exit
    each): the scope itself is made by C code, no ``__init__`` a span (it made three)."""
    one, spans_one = await _counted(1, _in_scope_module)
    three, spans_three = await _counted(3, _in_scope_module)
    assert spans_three - spans_one == 2 * 2
    assert three - one == 2 * 2 * 2  # two more steps, two spans each, enter and exit


async def test_a_chat_span_s_attributes_and_price_take_no_helper_call() -> None:
    """``chat_span`` builds its start attributes itself, in one dict (the helpers it
    called, ``chat_attributes`` and ``server_attributes``, are gone), and
    ``chat_response`` prices a reply without ``_cost`` (nothing is priced here: the
    run's total is its one call)."""
    assert not hasattr(_attributes, "chat_attributes")
    assert not hasattr(_attributes, "server_attributes")
    helpers = _code_is(_record._cost.__code__)
    one, spans_one = await _counted(1, helpers)
    three, spans_three = await _counted(3, helpers)
    assert spans_three - spans_one == 2 * 2
    assert three == one  # the run's own (its usage on the root span) only
