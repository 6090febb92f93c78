"""ScriptedModel: replay and function modes, recording, running out of script."""

from __future__ import annotations

import anyio
import pytest

from regiment.errors import ConfigError, ScriptExhausted
from regiment.models import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextPart,
    Usage,
    estimate_tokens,
    text_response,
    tool_call_response,
)

pytestmark = pytest.mark.anyio


def ask(text: str) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),))


async def test_replays_a_list_in_order_and_records_requests() -> None:
    call = tool_call_response("lookup", {"key": "a"}, call_id="c1")
    model = ScriptedModel([call, "all done"])
    first = await model.complete(ask("one"))
    second = await model.complete(ask("two"))
    assert first.tool_calls == call.tool_calls
    assert first.stop_reason == "tool_use"
    assert (second.text, second.stop_reason) == ("all done", "end_turn")
    assert [r.messages[0].text for r in model.requests] == ["one", "two"]
    assert model.calls == 2


async def test_running_out_names_the_call_number() -> None:
    model = ScriptedModel(["a", "b", "c"])
    for text in ("1", "2", "3"):
        await model.complete(ask(text))
    with pytest.raises(ScriptExhausted) as caught:
        await model.complete(ask("one more please"))
    message = str(caught.value)
    assert "'scripted' has 3 scripted responses and was called a 4th time" in message
    assert "one more please" in message
    assert model.calls == 4  # the extra request is recorded too, for the post-mortem


@pytest.mark.parametrize(
    ("calls", "ordinal"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (11, "11th"), (22, "22nd")]
)
async def test_ordinals_in_the_exhausted_message(calls: int, ordinal: str) -> None:
    model = ScriptedModel(["x"] * (calls - 1), name="critic")
    for _ in range(calls - 1):
        await model.complete(ask("q"))
    with pytest.raises(ScriptExhausted, match=f"'critic' has .* called a {ordinal} time"):
        await model.complete(ask("q"))


async def test_a_sync_function_decides_each_reply() -> None:
    def brain(request: ModelRequest) -> ModelResponse | str:
        last = request.messages[-1].text
        return tool_call_response("search", {"q": last}) if "find" in last else "answer"

    model = ScriptedModel(brain)
    assert (await model.complete(ask("find cats"))).tool_calls[0].arguments == {"q": "find cats"}
    assert (await model.complete(ask("thanks"))).text == "answer"
    assert model.calls == 2


async def test_an_async_function_may_wait() -> None:
    gate = anyio.Event()

    async def brain(request: ModelRequest) -> str:
        await gate.wait()
        return f"echo {request.messages[-1].text}"

    model = ScriptedModel(brain)
    replies: list[str] = []

    async def call() -> None:
        replies.append((await model.complete(ask("hi"))).text)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        assert model.calls == 1  # recorded before the brain answers
        assert replies == []
        gate.set()
    assert replies == ["echo hi"]


async def test_an_exception_from_the_function_propagates() -> None:
    def brain(request: ModelRequest) -> str:
        raise LookupError("brain has no rule for this prompt")

    with pytest.raises(LookupError, match="no rule"):
        await ScriptedModel(brain).complete(ask("?"))


async def test_string_replies_get_estimated_usage_and_the_model_name() -> None:
    request = ask("How many tokens is this question?")
    response = await ScriptedModel(["A short answer."], name="planner").complete(request)
    assert response.model == "planner"
    assert response.usage == Usage(
        input_tokens=estimate_tokens(request), output_tokens=estimate_tokens(response)
    )
    assert response.usage.input_tokens > 0


async def test_given_usage_and_model_are_kept() -> None:
    usage = Usage(input_tokens=5, output_tokens=2)
    scripted = text_response("hi", usage=usage, model="claude-x")
    response = await ScriptedModel([scripted]).complete(ask("q"))
    assert response == scripted


async def test_helper_responses_without_usage_get_an_estimate() -> None:
    response = await ScriptedModel([tool_call_response("probe", {"n": 1})]).complete(ask("q"))
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.model == "scripted"


def test_it_is_a_model() -> None:
    model = ScriptedModel([])
    assert isinstance(model, Model)
    assert (model.name, model.provider) == ("scripted", "scripted")


def test_a_bare_string_script_is_refused() -> None:
    with pytest.raises(ConfigError, match="pass a list of replies"):
        ScriptedModel("just one reply")  # a str is a Sequence, so only a run-time check catches it


async def test_requests_is_a_copy() -> None:
    model = ScriptedModel(["a"])
    await model.complete(ask("q"))
    model.requests.clear()
    assert model.calls == 1
    assert model.requests[0].messages == (Message(role="user", parts=(TextPart(text="q"),)),)


@pytest.mark.parametrize("returned", [None, 42], ids=["none", "int"])
async def test_a_script_that_returns_no_reply_says_so(returned: object) -> None:
    # A brain that forgets a case returns None: say what it must return, not a
    # TypeError about awaiting None.
    def brain(request: ModelRequest) -> object:
        return returned

    model = ScriptedModel(brain)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"its script returned .* for a planner request"):
        await model.complete(ModelRequest(messages=(Message.user("hi"),), role="planner"))


async def test_an_async_script_that_returns_no_reply_says_so() -> None:
    async def brain(request: ModelRequest) -> object:
        return None

    model = ScriptedModel(brain)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="its script returned None"):
        await model.complete(ModelRequest(messages=(Message.user("hi"),), role="worker"))


@pytest.mark.parametrize("item", [None, 5, {"text": "hi"}], ids=["none", "int", "dict"])
def test_a_list_script_item_that_is_no_reply_is_refused(item: object) -> None:
    # It was taken, and the call that reached it failed with "AttributeError: 'int'
    # object has no attribute 'model'", naming neither the script nor the item.
    with pytest.raises(ConfigError) as caught:
        ScriptedModel(["first", item])  # type: ignore[list-item]
    assert str(caught.value) == (
        f"ScriptedModel: script[1] is the {type(item).__name__} {item!r}, not a reply; give a "
        "str or a ModelResponse (text_response(...), tool_call_response(...)) for each call"
    )
