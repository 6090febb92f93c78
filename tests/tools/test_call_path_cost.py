"""What a plain tool call costs beyond its body (issue #22, row 3): a tool with no
parameters called with ``{}``, no key and no context runs with no validator, key,
argument-building or JSON-conversion frames around it. Counted exactly by the
interpreter's profiler; the calls that still need those layers still get them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, MappingProxyType

import pytest

from regiment import RunContext
from regiment._json import UNPARSED_ARGUMENTS
from regiment.tools import Toolset, _idempotency, _outcome, _schema, tool

pytestmark = pytest.mark.anyio

_LAYERS = {
    _schema.ArgumentSpec.validate.__code__: "ArgumentSpec.validate",
    _schema.ArgumentSpec.call_arguments.__code__: "ArgumentSpec.call_arguments",
    _idempotency.derive_key.__code__: "derive_key",
    _outcome.jsonable.__code__: "jsonable",
}


@contextmanager
def _layers_called() -> Iterator[list[str]]:
    """The layers above entered while the block runs, and any ``ABCMeta`` check."""
    seen: list[str] = []

    def profile(frame: FrameType, event: str, _: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in _LAYERS:
            seen.append(_LAYERS[code])
        elif code.co_qualname == "ABCMeta.__instancecheck__":
            seen.append("ABCMeta.__instancecheck__")

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


@tool
async def ping() -> str:
    """Say pong."""
    return "pong"


@tool
async def echo(text: str) -> str:
    """Say it back."""
    return text


@tool(idempotency_key=("order_id",))
async def refund(order_id: str) -> dict[str, str]:
    """Refund an order."""
    return {"refunded": order_id}


@tool
async def whose(ctx: RunContext[object]) -> str:
    """Say whose call this is."""
    return f"{ctx.run_id}/{ctx.idempotency_key}"


async def test_a_parameterless_call_has_no_layer_around_its_body() -> None:
    tools = Toolset("t", [ping])
    await tools.call("ping", {}, call_id="warm")
    with _layers_called() as seen:
        result = await tools.call("ping", {}, call_id="c1")
    assert (result.content, result.is_error, result.arguments) == ("pong", False, {})
    assert seen == []  # main: validate, derive_key, call_arguments, an ABC check


async def test_arguments_are_still_validated() -> None:
    tools = Toolset("t", [echo, ping])
    with _layers_called() as seen:
        good = await tools.call("echo", {"text": "hi"}, call_id="c1")
        bad = await tools.call("echo", {"text": 3}, call_id="c2")
        extra = await tools.call("ping", {"x": 1}, call_id="c3")
    assert (good.content, good.is_error) == ("hi", False)
    assert bad.error_type == extra.error_type == "invalid_arguments"
    assert "text" in str(bad.content)
    assert "x" in str(extra.content)
    assert seen.count("ArgumentSpec.validate") == 3


async def test_a_declared_key_and_a_json_value_still_go_through_their_layers() -> None:
    tools = Toolset("t", [refund])
    with _layers_called() as seen:
        result = await tools.call("refund", {"order_id": "88"}, call_id="c1")
    assert result.idempotency_key == "refund:order_id=88"
    assert result.content == {"refunded": "88"}
    assert "derive_key" in seen
    assert "jsonable" in seen


async def test_a_context_tool_still_gets_its_context() -> None:
    context: RunContext[object] = RunContext(
        run_id="r1",
        step_id="s1",
        worker="w",
        plan_version=1,
        call_id="c1",
        idempotency_key="k1",
        deps=None,
    )
    tools = Toolset("t", [whose])
    with _layers_called() as seen:
        result = await tools.call("whose", {}, call_id="c1", context=context)
    assert (result.content, result.is_error) == ("r1/k1", False)
    assert "ArgumentSpec.call_arguments" in seen


async def test_a_mapping_that_is_not_a_dict_is_read_as_before() -> None:
    tools = Toolset("t", [ping, echo])
    unread = await tools.call("ping", MappingProxyType({UNPARSED_ARGUMENTS: "[1"}), call_id="c1")
    assert unread.error_type == "invalid_arguments"
    assert "not one JSON object" in str(unread.content)
    proxied = await tools.call("ping", MappingProxyType({}), call_id="c2")
    assert (proxied.content, proxied.is_error) == ("pong", False)
    shown = await tools.call("echo", MappingProxyType({"text": "yo"}), call_id="c3")
    assert (shown.content, shown.is_error) == ("yo", False)
