"""A tool parameter annotated ``RunContext``: out of the schema, filled in by the caller."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from regiment import RunContext
from regiment.errors import ConfigError
from regiment.tools import Tool, Toolset, tool

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Db:
    name: str


def _context(key: str = "run-1/v1/s1/0", deps: object = None) -> RunContext[object]:
    return RunContext(
        run_id="run-1",
        step_id="s1",
        worker="billing",
        plan_version=1,
        call_id="c1",
        idempotency_key=key,
        deps=deps,
    )


@tool
async def refund(order_id: str, ctx: RunContext[Db], amount: int = 5) -> str:
    """Refund an order."""
    return f"{ctx.deps.name}:{order_id}:{amount}:{ctx.idempotency_key}:{ctx.step_id}"


def test_the_context_parameter_is_not_in_the_schema() -> None:
    schema = refund.definition.input_schema
    assert set(schema["properties"]) == {"order_id", "amount"}  # type: ignore[arg-type]
    assert schema["required"] == ["order_id"]
    assert "ctx" not in str(schema)


async def test_the_tool_gets_the_context_it_is_called_with() -> None:
    result = await refund.call({"order_id": "88"}, call_id="c1", context=_context(deps=Db("main")))
    assert not result.is_error, result.content
    assert result.content == "main:88:5:run-1/v1/s1/0:s1"


async def test_a_model_cannot_send_the_context_itself() -> None:
    result = await refund.call({"order_id": "88", "ctx": {}}, call_id="c1", context=_context())
    assert result.is_error
    assert result.error_type == "invalid_arguments"


async def test_without_a_context_the_call_is_an_error_that_says_why() -> None:
    result = await refund.call({"order_id": "88"}, call_id="c1")
    assert result.is_error
    assert result.error_type == "no_run_context"
    assert "RunContext" in str(result.content)


async def test_a_positional_only_context_goes_in_its_place() -> None:
    def lookup(ctx: RunContext[None], key: str, /, scale: int = 1) -> str:
        return f"{ctx.run_id}:{key}:{scale}"

    made = Tool(lookup)
    assert set(made.definition.input_schema["properties"]) == {"key", "scale"}  # type: ignore[arg-type]
    result = await made.call({"key": "a", "scale": 3}, call_id="c", context=_context())
    assert result.content == "run-1:a:3"


async def test_a_toolset_passes_the_context_on() -> None:
    tools = Toolset("billing", [refund])
    result = await tools.call(
        "refund", {"order_id": "7", "amount": 2}, call_id="c", context=_context(deps=Db("x"))
    )
    assert result.content == "x:7:2:run-1/v1/s1/0:s1"


def test_a_declared_key_is_derived_from_the_validated_arguments() -> None:
    @tool(idempotency_key=("order_id",))
    def refund_once(order_id: str, ctx: RunContext[None]) -> str:
        return order_id

    tools = Toolset("billing", [refund_once, refund])
    assert tools.key_for("refund_once", {"order_id": "88"}) == "refund_once:order_id=88"
    assert tools.key_for("refund_once", {"order_id": 88}) is None  # invalid: no key
    assert tools.key_for("refund", {"order_id": "88"}) is None  # declares none
    assert tools.key_for("missing", {}) is None


def test_two_context_parameters_are_refused() -> None:
    def twice(a: RunContext[None], b: RunContext[None]) -> str:
        return ""

    with pytest.raises(ConfigError, match="several RunContext parameters"):
        Tool(twice)


def test_an_idempotency_key_cannot_name_the_context() -> None:
    def keyed(order_id: str, ctx: RunContext[None]) -> str:
        return order_id

    with pytest.raises(ConfigError, match="choose among: order_id"):
        Tool(keyed, idempotency_key=("ctx",))
